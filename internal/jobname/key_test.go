package jobname

import "testing"

// Names MySQL's default collations keep in one row share a key; others do not.
func TestKey(t *testing.T) {
	same := [][2]string{
		{"job", "JOB"}, {"job", "job  "}, {"job", "jöb"}, {"café", "CAFE"},
		{"a😀", "a😎"}, {"ǅ", "ǆ"},
	}
	for _, p := range same {
		if Key(p[0]) != Key(p[1]) {
			t.Errorf("Key(%q) = %q, Key(%q) = %q: want one key", p[0], Key(p[0]), p[1], Key(p[1]))
		}
	}
	differ := [][2]string{{"job", "jobs"}, {"job", " job"}, {"a", "b"}, {"a😀", "a"}, {"ø", "o"}}
	for _, p := range differ {
		if Key(p[0]) == Key(p[1]) {
			t.Errorf("Key(%q) == Key(%q) = %q: want two keys", p[0], p[1], Key(p[0]))
		}
	}
}
