package lockcfg

// Checked is the executor's word that it has checked a config (or an
// Extend's durations) already: a store's TryLockChecked, TryLockBatchChecked
// and its locks' ExtendChecked take it and skip the checks TryLock and Extend
// make, so that each is made once. Only this repository's modules can name
// it: no other caller can skip a check.
type Checked struct{}
