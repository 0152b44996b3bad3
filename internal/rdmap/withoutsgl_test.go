package rdmap

import (
	"reflect"
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// TestWithoutSGLCopiesEveryField: withoutSGL lists SendWR's fields by hand;
// a field added to rdma.SendWR and not copied would be lost at post time.
func TestWithoutSGLCopiesEveryField(t *testing.T) {
	var wr rdma.SendWR
	v := reflect.ValueOf(&wr).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.ValueOf([]rdma.SGE{{STag: 1}}))
		case reflect.Struct:
			for j := 0; j < f.NumField(); j++ {
				f.Field(j).SetUint(uint64(100*i + j + 1))
			}
		default:
			f.SetUint(uint64(i + 1))
		}
	}
	got := withoutSGL(&wr)
	want := wr
	want.SGL = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("withoutSGL = %+v, want %+v", got, want)
	}
}
