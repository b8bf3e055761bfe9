// Package deploy holds the container recipe and the Kubernetes manifests
// of netcode-server and netcode-token, and a test that checks them without
// a cluster. It is a module of its own so that the Kubernetes API types
// the test decodes into stay out of the engine's dependencies.
package deploy
