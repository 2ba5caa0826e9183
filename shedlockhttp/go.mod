module github.com/shedlock-go/shedlock/shedlockhttp

go 1.25

require github.com/shedlock-go/shedlock v0.1.0

require github.com/robfig/cron/v3 v3.0.1
