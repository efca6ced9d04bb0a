package tree

import "iter"

// liveSet holds the ids of a run's nodes that have not ended, in ascending
// order, with the number of children each node has that have not ended.
// A terminal node never changes again, so a node leaves the set once and
// for good; the scheduler then scans only the nodes that can still move
// and knows a parent's children are done without looking at them, where a
// scan of every node after the first one still live (the root, in a
// fan-out) made each scheduling pass cost the size of the run.
//
// The set is a doubly linked list threaded through slices indexed by node
// id (ids are small and dense: 1, 2, … in creation order).
type liveSet struct {
	next, prev []int64 // by id; 0 ends the list
	in         []bool  // by id: in the list
	head, tail int64
	open       map[int64]int // parent id → children not ended
}

// add appends id, which is greater than every id added before, and counts
// it as an open child of parent (0: none).
func (l *liveSet) add(id, parent int64) {
	if need := int(id) + 1; need > len(l.in) {
		size := max(need, 2*len(l.in), 16)
		l.next = append(l.next, make([]int64, size-len(l.next))...)
		l.prev = append(l.prev, make([]int64, size-len(l.prev))...)
		l.in = append(l.in, make([]bool, size-len(l.in))...)
	}
	if l.in[id] {
		return
	}
	l.in[id] = true
	l.prev[id], l.next[id] = l.tail, 0
	if l.tail != 0 {
		l.next[l.tail] = id
	} else {
		l.head = id
	}
	l.tail = id
	if parent != 0 {
		if l.open == nil {
			l.open = map[int64]int{}
		}
		l.open[parent]++
	}
}

// end removes id, which has ended, and counts it off its parent's open
// children. Its own next link stays, so a scan standing on it goes on.
func (l *liveSet) end(id, parent int64) {
	if int(id) >= len(l.in) || !l.in[id] {
		return
	}
	l.in[id] = false
	p, n := l.prev[id], l.next[id]
	if p != 0 {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n != 0 {
		l.prev[n] = p
	} else {
		l.tail = p
	}
	if parent != 0 {
		if l.open[parent]--; l.open[parent] <= 0 {
			delete(l.open, parent)
		}
	}
}

// openChildren returns how many of id's children have not ended.
func (l *liveSet) openChildren(id int64) int { return l.open[id] }

// all yields the ids in the set in ascending order. The loop body may end
// nodes, including the one it is given, and add new ones at the end.
func (l *liveSet) all() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for id := l.head; id != 0; id = l.next[id] {
			if !yield(id) {
				return
			}
		}
	}
}
