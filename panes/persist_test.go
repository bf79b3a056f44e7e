package panes

import (
	"reflect"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestVolatileOnlyComparesEveryOtherField: a change of any field but readiness, summary,
// input line and the update time is written eagerly; a field added to nudge.Runtime
// fails here until volatileOnly compares it (or it is meant to be volatile).
func TestVolatileOnlyComparesEveryOtherField(t *testing.T) {
	volatile := map[string]bool{"Readiness": true, "Summary": true, "InputLine": true, "UpdatedAt": true, "Dialog": true}
	base := nudge.Runtime{RuntimeID: "w.r", Argv: []string{"sh"}, Failures: []time.Time{time.Unix(5, 0)}}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		next := cloneRuntime(&base)
		f := reflect.ValueOf(&next).Elem().Field(i)
		switch v := f.Addr().Interface().(type) {
		case *time.Time:
			*v = time.Unix(9, 0)
		case **time.Time:
			ts := time.Unix(9, 0)
			*v = &ts
		case **int:
			n := 3
			*v = &n
		case **nudge.Dialog:
			*v = &nudge.Dialog{DialogID: "d1"}
		case *[]string:
			*v = []string{"other"}
		case *[]time.Time:
			*v = []time.Time{time.Unix(9, 0)}
		default:
			switch f.Kind() {
			case reflect.String:
				f.SetString("changed")
			case reflect.Int:
				f.SetInt(7)
			case reflect.Bool:
				f.SetBool(!f.Bool())
			default:
				t.Fatalf("field %s: kind %s not handled by this test", typ.Field(i).Name, f.Kind())
			}
		}
		name := typ.Field(i).Name
		if got := volatileOnly(&base, &next); got != volatile[name] {
			t.Errorf("a change of %s: volatileOnly = %v, want %v", name, got, volatile[name])
		}
	}
	same := cloneRuntime(&base)
	if !volatileOnly(&base, &same) {
		t.Error("an equal copy is not volatileOnly")
	}
}
