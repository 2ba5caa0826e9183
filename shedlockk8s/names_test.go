package shedlockk8s_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shedlock-go/shedlock/shedlockk8s"
)

func TestLeaseName(t *testing.T) {
	cases := []struct{ env, name, prefix string }{
		{"default", "report", "shedlock-report-"},
		{"default", "Compact Tables!", "shedlock-compact-tables-"},
		{"default", "__x__", "shedlock-x-"},
		{"default", "日本語", "shedlock-"},
		{"default", "--", "shedlock-"},
		{"default", strings.Repeat("a", 64), "shedlock-" + strings.Repeat("a", 30) + "-"},
		{"default", strings.Repeat("ab-", 20), "shedlock-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-"},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := shedlockk8s.LeaseName(c.env, c.name)
		if !strings.HasPrefix(got, c.prefix) || len(got) != len(c.prefix)+12 {
			t.Errorf("LeaseName(%q, %q) = %q, want %q and 12 hex digits", c.env, c.name, got, c.prefix)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("LeaseName(%q, %q) = %q: %v", c.env, c.name, got, errs)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("LeaseName: %q and %q both %q", other, c.name, got)
		}
		seen[got] = c.name
	}
	// Names that slug alike, and envs, stay apart.
	for _, pair := range [][2][2]string{
		{{"default", "job"}, {"default", "JOB"}},
		{{"default", "a b"}, {"default", "a-b"}},
		{{"default", "job"}, {"other", "job"}},
	} {
		x, y := shedlockk8s.LeaseName(pair[0][0], pair[0][1]), shedlockk8s.LeaseName(pair[1][0], pair[1][1])
		if x == y {
			t.Errorf("%v and %v share the Lease %q", pair[0], pair[1], x)
		}
	}
	if shedlockk8s.LeaseName("default", "job") != shedlockk8s.LeaseName("default", "job") {
		t.Error("LeaseName is not deterministic")
	}
}
