module github.com/netcode-go/netcode

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	golang.org/x/crypto v0.58.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
)
