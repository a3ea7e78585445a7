module github.com/plangate/plangate

go 1.26

require (
	github.com/goccy/go-yaml v1.19.2
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/robfig/cron/v3 v3.0.1
	github.com/yuin/goldmark v1.8.7
)
