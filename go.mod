module github.com/shedlock-go/shedlock

go 1.24

require github.com/robfig/cron/v3 v3.0.1
