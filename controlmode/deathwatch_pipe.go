//go:build unix && !linux && !freebsd

package controlmode

var hostWatch parentWatch = pipeWatch{}
