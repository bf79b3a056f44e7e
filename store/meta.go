package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// reservedMeta prefixes the meta keys the store uses itself (the audit head).
const reservedMeta = "\x00"

// Meta is the store's bucket of small daemon state (token keys, revocations,
// counters): PutMeta, GetMeta, DeleteMeta. Keys starting with a NUL byte are the
// store's own (the audit head, the event log's state) and are refused. Reached as part
// of a DB (its methods are the DB's).
type Meta struct{ db *DB }

func checkMetaKey(key string) error {
	if key == "" || key[0] == reservedMeta[0] {
		return fmt.Errorf("meta key %q: %w", key, ErrInvalid)
	}
	return nil
}

// PutMeta stores val under key, for small daemon state (token keys, revocations,
// counters). Keys must be non-empty and must not start with a NUL byte.
func (mt *Meta) PutMeta(key string, val []byte) error {
	if err := checkMetaKey(key); err != nil {
		return fmt.Errorf("put meta: %w", err)
	}
	return mt.db.update("put meta "+key, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(key), val)
	})
}

// GetMeta returns a copy of the value under key, or ErrNotFound.
func (mt *Meta) GetMeta(key string) ([]byte, error) {
	var out []byte
	err := mt.db.view("get meta "+key, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = bytes.Clone(v)
		if out == nil {
			out = []byte{}
		}
		return nil
	})
	return out, err
}

// DeleteMeta removes key, or returns ErrNotFound.
func (mt *Meta) DeleteMeta(key string) error {
	if err := checkMetaKey(key); err != nil {
		return fmt.Errorf("delete meta: %w", err)
	}
	return mt.db.update("delete meta "+key, func(tx *bolt.Tx) error {
		return deleteKey(tx.Bucket(bucketMeta), []byte(key))
	})
}
