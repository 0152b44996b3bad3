module github.com/goiwarp/iwarp

go 1.26
