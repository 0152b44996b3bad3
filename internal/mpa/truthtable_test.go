package mpa

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the truth tables in docs/mpa.md")

const docPath = "../../docs/mpa.md"

// cell escapes a table cell for markdown.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// plain escapes a plain-text table cell.
func plain(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// responderTable renders responderRows (after TestDecideResponderTable has
// asserted them) as a markdown table.
func responderTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| # | Request | Responder config | Reply | Outcome | Responder's parameters |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for i, r := range responderRows {
		req := mkFrame(t, r.reply, r.flags, r.rev, r.blk, r.ulp)
		reply := r.wantReply
		if reply == "—" {
			reply = ""
		}
		fmt.Fprintf(&b, "| R%d | %s | %s | %s | %s | %s |\n", i+1, cell(fmtFrame(req)), plain(r.config), cell(reply), plain(r.wantOutcome), cell(r.wantParams))
	}
	return b.String()
}

// initiatorTable renders initiatorRows as a markdown table.
func initiatorTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| # | Initiator config | Request | Reply | Outcome | Initiator's parameters |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for i, r := range initiatorRows {
		_, req := initiatorRequest(t, r)
		rep := mkFrame(t, !r.notReply, r.flags, r.rev, r.blk, r.ulp)
		fmt.Fprintf(&b, "| I%d | %s | %s | %s | %s | %s |\n", i+1, plain(r.config), cell(fmtFrame(req)), cell(fmtFrame(rep)), plain(r.wantOut), cell(r.wantParam))
	}
	return b.String()
}

// replaceSection swaps the text between <!-- BEGIN name --> and
// <!-- END name --> lines.
func replaceSection(doc, name, body string) (string, string, bool) {
	begin, end := "<!-- BEGIN "+name+" -->\n", "<!-- END "+name+" -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return doc, "", false
	}
	i += len(begin)
	return doc[:i] + body + doc[j:], doc[i:j], true
}

func TestTruthTablesInDoc(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, s := range []struct {
		name string
		body string
	}{{"responder-table", responderTable(t)}, {"initiator-table", initiatorTable(t)}, {"siw-replies", siwTable(t)}} {
		newDoc, old, ok := replaceSection(doc, s.name, s.body)
		if !ok {
			t.Fatalf("%s: no %s section", docPath, s.name)
		}
		if old != s.body && !*update {
			t.Errorf("%s: the %s differs from the tests' rows; run go test -run TestTruthTablesInDoc -update ./internal/mpa", docPath, s.name)
		}
		doc = newDoc
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
