package vault

import (
	"strconv"
	"strings"
)

// YAMLErrorLine reads the line and message of a YAML syntax error as the
// YAML library words it ("yaml: line N: msg"), for the messages that name a
// file, line and rule (profiles, policy, drafts). ok is false for an error
// that names no line.
//
// The library reports an unclosed flow collection ("did not find expected
// ',' or ']'") at its context mark, the opening bracket, counted from 0
// where every other message counts from 1: the line is one early (issue
// 23). Those messages get the bracket's line, 1-based, and say which
// bracket is not closed.
func YAMLErrorLine(err error) (line int, msg string, ok bool) {
	if err == nil {
		return 0, "", false
	}
	rest, found := strings.CutPrefix(err.Error(), "yaml: line ")
	if !found {
		return 0, "", false
	}
	num, msg, found := strings.Cut(rest, ": ")
	if !found {
		return 0, "", false
	}
	line, e := strconv.Atoi(num)
	if e != nil {
		return 0, "", false
	}
	switch msg {
	case "did not find expected ',' or ']'":
		return line + 1, "the flow sequence '[' opened on this line is not closed (did not find expected ',' or ']')", true
	case "did not find expected ',' or '}'":
		return line + 1, "the flow mapping '{' opened on this line is not closed (did not find expected ',' or '}')", true
	}
	return line, msg, true
}
