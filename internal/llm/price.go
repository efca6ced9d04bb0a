package llm

// Price is what a model costs in US dollars per million tokens.
type Price struct {
	InputPerMTok      float64 `yaml:"input" json:"input"`
	OutputPerMTok     float64 `yaml:"output" json:"output"`
	CacheReadPerMTok  float64 `yaml:"cache_read" json:"cache_read"`
	CacheWritePerMTok float64 `yaml:"cache_write" json:"cache_write"`
}

// Cost returns the dollar cost of u at price p.
func (p Price) Cost(u Usage) float64 {
	const m = 1e6
	return float64(u.InputTokens)*p.InputPerMTok/m +
		float64(u.OutputTokens)*p.OutputPerMTok/m +
		float64(u.CacheReadTokens)*p.CacheReadPerMTok/m +
		float64(u.CacheWriteTokens)*p.CacheWritePerMTok/m
}
