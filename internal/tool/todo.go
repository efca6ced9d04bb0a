package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Limits of todo_write.
const (
	todoMaxItems = 100
	// todoMaxRenderChars cuts each item in the rendering returned to the
	// model; the stored item keeps its full text.
	todoMaxRenderChars = 200
)

// TodoStatus is where an item of the todo list stands.
type TodoStatus string

const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todo is one item of an agent's todo list.
type Todo struct {
	ID         string     `json:"id" jsonschema_description:"Stable identifier of the item, unique within the list."`
	Content    string     `json:"content" jsonschema_description:"What has to be done, in the imperative (\"Run the tests\")."`
	Status     TodoStatus `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed" jsonschema_description:"pending, in_progress or completed. Several items may be in_progress only as independent workstreams, each with its own active_form."`
	ActiveForm string     `json:"active_form" jsonschema_description:"The same in the present continuous (\"Running the tests\"), shown while in progress."`
}

// ErrInvalidTodos is what TodoList.Set's validation errors unwrap to.
var ErrInvalidTodos = errors.New("invalid todo list")

// TodoList is an agent's current todo list. It is safe for concurrent use.
type TodoList struct {
	onChange func([]Todo)
	// update serializes Set with its OnChange call, so observers see
	// changes in the order they were made and may call Items.
	update sync.Mutex
	mu     sync.RWMutex // guards items
	items  []Todo
}

// NewTodoList returns an empty list. onChange, when not nil, is called with
// a copy of the list after every successful Set.
func NewTodoList(onChange func([]Todo)) *TodoList {
	return &TodoList{onChange: onChange}
}

// Items returns a copy of the list.
func (l *TodoList) Items() []Todo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.items)
}

// Set validates items and replaces the list with them. Validation errors
// unwrap to ErrInvalidTodos and leave the list unchanged.
func (l *TodoList) Set(items []Todo) error {
	_, err := l.swap(items)
	return err
}

// swap is Set that also returns the list it replaced.
func (l *TodoList) swap(items []Todo) ([]Todo, error) {
	if err := validateTodos(items); err != nil {
		return nil, err
	}
	l.update.Lock()
	defer l.update.Unlock()
	l.mu.Lock()
	old := l.items
	l.items = slices.Clone(items)
	l.mu.Unlock()
	if l.onChange != nil {
		l.onChange(slices.Clone(items))
	}
	return old, nil
}

func validateTodos(items []Todo) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidTodos, fmt.Sprintf(format, args...))
	}
	if len(items) > todoMaxItems {
		return invalid("%d items; at most %d are allowed", len(items), todoMaxItems)
	}
	seen := make(map[string]int, len(items))
	var inProgress []string
	forms := map[string]bool{}
	formsUnique := true
	for i, t := range items {
		n := i + 1
		switch {
		case strings.TrimSpace(t.ID) == "":
			return invalid("item %d has an empty id", n)
		case strings.TrimSpace(t.Content) == "":
			return invalid("item %q has empty content", t.ID)
		}
		if prev, dup := seen[t.ID]; dup {
			return invalid("id %q is used by items %d and %d; ids must be unique", t.ID, prev, n)
		}
		seen[t.ID] = n
		switch t.Status {
		case TodoPending, TodoCompleted:
		case TodoInProgress:
			inProgress = append(inProgress, t.ID)
			f := strings.TrimSpace(t.ActiveForm)
			formsUnique = formsUnique && f != "" && !forms[f]
			forms[f] = true
		default:
			return invalid("item %q has unknown status %q (use pending, in_progress or completed)", t.ID, t.Status)
		}
	}
	if len(inProgress) > 1 && !formsUnique {
		return invalid("%d items are in_progress (%s); several may be only when they are independent workstreams, each with its own active_form", len(inProgress), strings.Join(inProgress, ", "))
	}
	return nil
}

type todoWriteArgs struct {
	Todos []Todo `json:"todos" jsonschema_description:"The complete new todo list; it replaces the previous one."`
}

const todoWriteDescription = `Replace your todo list for this task. Send the whole list each time. ` +
	`Use it for work with several steps: mark an item in_progress before starting it and completed as soon as it is done. ` +
	`Keep one item in_progress, unless independent workstreams run at once: then each in_progress item needs its own active_form.`

func newTodoWrite(list *TodoList) Tool {
	return New("todo_write", todoWriteDescription, KindInteract, func(ctx context.Context, _ Call, a todoWriteArgs) Result {
		old, err := list.swap(a.Todos)
		if err != nil {
			return Errorf("%v", err)
		}
		res := Result{Content: renderTodos(a.Todos)}
		if wantsDetail(ctx) {
			if !slices.ContainsFunc(old, func(t Todo) bool { return t.Status != TodoCompleted }) {
				old = nil // a finished list is gone, as in Claude Code
			}
			res.Detail = &Detail{Todo: &TodoDetail{Old: old, New: slices.Clone(a.Todos)}}
		}
		return res
	})
}

// renderTodos is the compact view returned to the model.
func renderTodos(items []Todo) string {
	if len(items) == 0 {
		return "todo list cleared"
	}
	done := 0
	var b strings.Builder
	for _, t := range items {
		mark, text := "[ ]", t.Content
		switch t.Status {
		case TodoCompleted:
			mark = "[x]"
			done++
		case TodoInProgress:
			mark = "[>]"
			if t.ActiveForm != "" {
				text = t.ActiveForm
			}
		}
		if cut, ok := cutRunes(text, todoMaxRenderChars); ok {
			text = cut + "…"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, t.ID, text)
	}
	return fmt.Sprintf("todo list updated (%d/%d completed)\n%s", done, len(items), b.String())
}
