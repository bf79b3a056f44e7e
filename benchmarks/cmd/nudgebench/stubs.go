package main

import "io"

type detectRow struct{}
type scaleResult struct{}
type throughputResult struct{}

func (b *bench) detection(n int) ([]detectRow, error)   { return nil, nil }
func (b *bench) scale() (*scaleResult, error)           { return nil, nil }
func (b *bench) throughput() (*throughputResult, error) { return nil, nil }
func (r *report) printDetect(w io.Writer)               {}
func (s *scaleResult) print(w io.Writer)                {}
func (s *throughputResult) print(w io.Writer)           {}
