//go:build !linux && !freebsd

package controlmode

import (
	"io"
	"os"
)

// rawPipeReads says whether pipeFrom makes its reads raw system calls here.
const rawPipeReads = false

// pipeFrom returns the reader the read loop uses for f: f itself here (on Linux and
// FreeBSD the read is a raw system call, pipe_raw.go).
func pipeFrom(f *os.File) io.Reader { return f }
