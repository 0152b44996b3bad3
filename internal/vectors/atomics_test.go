package vectors

import (
	"strings"
	"testing"
)

func TestParseAtomics(t *testing.T) {
	in := "# c\nop\toriginal\tdata\tmask\tcompare_data\tcompare_mask\tresult\n" +
		"cmpswap\t1\t2\t3\t4\t5\tffffffffffffffff\n"
	as, err := ParseAtomics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Atomic{"cmpswap", 1, 2, 3, 4, 5, ^uint64(0)}
	if len(as) != 1 || as[0] != want {
		t.Fatalf("%+v", as)
	}
	for _, bad := range []string{
		"fetchadd\t1\t2\t3\t4\t5\n",                    // six columns
		"swap\t1\t2\t3\t4\t5\t6\n",                     // unknown op
		"fetchadd\t1\t2\t3\t4\t5\tzz\n",                // not hex
		"fetchadd\t1\t2\t3\t4\t5\t1ffffffffffffffff\n", // over 64 bits
	} {
		if _, err := ParseAtomics(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestSharedAtomics(t *testing.T) {
	as, err := ReadAtomics("testdata/" + AtomicsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) < 90 {
		t.Fatalf("%d rows", len(as))
	}
}
