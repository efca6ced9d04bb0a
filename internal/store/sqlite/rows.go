package sqlite

// known is what the writer remembers of rows it committed, so a later
// write can skip a read or rewrite less (nodeRows, the sessions' last_seq).
// Only the writer's leader touches it. Every use checks the row still
// holds what it remembers (another process may have written it, or the
// write that left the entry was rolled back), so an entry is a hint:
// past limit entries, some are dropped at random.
type known[K comparable, V any] struct {
	m     map[K]V
	limit int
}

func (k *known[K, V]) get(key K) (V, bool) {
	v, ok := k.m[key]
	return v, ok
}

func (k *known[K, V]) put(key K, v V) {
	if k.m == nil {
		k.m = map[K]V{}
	}
	if _, ok := k.m[key]; !ok && len(k.m) >= k.limit {
		drop := max(1, k.limit/8)
		for old := range k.m {
			delete(k.m, old)
			if drop--; drop == 0 {
				break
			}
		}
	}
	k.m[key] = v
}

func (k *known[K, V]) forget(key K) { delete(k.m, key) }
