package main

import "github.com/netcode-go/netcode/engine/dedicated"

// wrapGame, when set, wraps the game the command serves. Only the
// command's tests set it (hung_test.go hangs the game to check the
// SIGTERM bound); it is nil in the command.
var wrapGame func(dedicated.Game) dedicated.Game
