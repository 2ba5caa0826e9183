package k8s_test

const workerEnv = "SHEDLOCK_K8S_WORKER"

func worker(spec string) int { return 2 }
