package llmtest

import (
	"net/http"
)

// ModelID is the one model the server lists.
const ModelID = "llmtest"

type antModelList struct {
	Data    []antModel `json:"data"`
	HasMore bool       `json:"has_more"`
	FirstID string     `json:"first_id"`
	LastID  string     `json:"last_id"`
}

type antModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

type oaModelList struct {
	Object string    `json:"object"`
	Data   []oaModel `json:"data"`
}

type oaModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// handleModels lists ModelID in the Anthropic shape when the request comes
// from the Anthropic SDK and in the OpenAI shape otherwise.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if isAnthropic(r) {
		body = mustJSON(antModelList{
			Data:    []antModel{{Type: "model", ID: ModelID, DisplayName: "llmtest scripted model", CreatedAt: "2025-01-01T00:00:00Z"}},
			FirstID: ModelID, LastID: ModelID,
		})
	} else {
		body = mustJSON(oaModelList{
			Object: "list",
			Data:   []oaModel{{ID: ModelID, Object: "model", Created: 1735689600, OwnedBy: "llmtest"}},
		})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
