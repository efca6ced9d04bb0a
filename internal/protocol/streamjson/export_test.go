package streamjson

import "encoding/json"

// Hooks for FuzzServe's oracle: they decode an input line with the types
// Serve decodes it with, so the oracle knows which lines Serve must act
// on; what Serve then owes each one the oracle states itself.

// FuzzControlRequest is a control_request line as Serve reads it.
type FuzzControlRequest struct{ ID, Subtype, Model string }

// DecodeControlRequest decodes a control_request line; an error means
// Serve ignores the line.
func DecodeControlRequest(raw []byte) (FuzzControlRequest, error) {
	var r controlRequestIn
	err := json.Unmarshal(raw, &r)
	return FuzzControlRequest{ID: r.RequestID, Subtype: r.Request.Subtype, Model: r.Request.Model}, err
}

// DecodeRegistryRequest decodes a registry_request line and returns its
// request_id; an error means Serve ignores the line.
func DecodeRegistryRequest(raw []byte) (string, error) {
	var r registryRequest
	err := json.Unmarshal(raw, &r)
	return r.RequestID, err
}

// UserTurn reports whether a user line is a turn: it decodes, is not
// only tool_result blocks (the answers of host shell commands) and has a
// content Serve can read.
func UserTurn(raw []byte) bool {
	var u userInput
	if json.Unmarshal(raw, &u) != nil {
		return false
	}
	var blocks []contentBlock
	if json.Unmarshal(u.Message.Content, &blocks) == nil && len(blocks) > 0 {
		only := true
		for _, b := range blocks {
			only = only && b.Type == "tool_result"
		}
		if only {
			return false
		}
	}
	_, err := u.text()
	return err == nil
}
