package tool

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestTodoWrite(t *testing.T) {
	t.Parallel()

	items := []Todo{
		{ID: "1", Content: "Read the spec", Status: TodoCompleted, ActiveForm: "Reading the spec"},
		{ID: "2", Content: "Write the parser", Status: TodoInProgress, ActiveForm: "Writing the parser"},
		{ID: "3", Content: "Run the tests", Status: TodoPending, ActiveForm: "Running the tests"},
	}

	t.Run("StoresRendersAndNotifies", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		got := reqOK(t, f.call("TodoWrite", todoWriteArgs{Todos: items}))
		reqEqual(t, got, "todo list updated (1/3 completed)\n[x] 1: Read the spec\n[>] 2: Writing the parser\n[ ] 3: Run the tests\n")
		reqEqual(t, slices.Equal(f.todos.Items(), items), true)
		reqEqual(t, slices.Equal(<-f.changes, items), true)

		reqEqual(t, reqOK(t, f.call("todo_write", todoWriteArgs{Todos: []Todo{}})), "todo list cleared")
		reqEqual(t, len(f.todos.Items()), 0)
		reqEqual(t, len(<-f.changes), 0)
	})

	t.Run("RejectsInvalidListsWithoutChangingIt", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqOK(t, f.call("todo_write", todoWriteArgs{Todos: items}))
		<-f.changes

		twoActive := slices.Clone(items)
		twoActive[2].Status = TodoInProgress
		twoActive[2].ActiveForm = twoActive[1].ActiveForm // the same workstream twice
		dupID := slices.Clone(items)
		dupID[2].ID = "1"
		noID := slices.Clone(items)
		noID[1].ID = " "
		noContent := slices.Clone(items)
		noContent[0].Content = ""
		tooMany := make([]Todo, todoMaxItems+1)
		for i := range tooMany {
			tooMany[i] = Todo{ID: fmt.Sprint(i), Content: "x", Status: TodoPending, ActiveForm: "x"}
		}
		cases := []struct {
			name  string
			todos []Todo
			want  string
		}{
			{"TwoInProgressOneForm", twoActive, "2 items are in_progress (2, 3); several may be only when they are independent workstreams, each with its own active_form"},
			{"DuplicateID", dupID, `id "1" is used by items 1 and 3`},
			{"EmptyID", noID, "item 2 has an empty id"},
			{"EmptyContent", noContent, `item "1" has empty content`},
			{"TooMany", tooMany, "101 items; at most 100"},
		}
		for _, tc := range cases {
			reqContains(t, reqErr(t, f.call("todo_write", todoWriteArgs{Todos: tc.todos})), tc.want)
		}
		reqContains(t, reqErr(t, f.callRaw("todo_write", `{"todos":[{"id":"a","content":"x","status":"done","active_form":"x"}]}`)),
			`field "todos[0].status" must be one of "pending", "in_progress", "completed"`)
		reqEqual(t, slices.Equal(f.todos.Items(), items), true)
		select {
		case c := <-f.changes:
			t.Fatalf("OnChange called for a rejected list: %v", c)
		default:
		}
	})

	t.Run("ParallelWorkstreams", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		two := slices.Clone(items)
		two[2].Status = TodoInProgress // "Running the tests" beside "Writing the parser"
		reqEqual(t, reqOK(t, f.call("todo_write", todoWriteArgs{Todos: two})) != "", true)
		reqEqual(t, slices.Equal(f.todos.Items(), two), true)
	})

	t.Run("SetValidatesDirectCallers", func(t *testing.T) {
		t.Parallel()
		err := NewTodoList(nil).Set([]Todo{{ID: "a", Content: "x", Status: "later"}})
		if !errors.Is(err, ErrInvalidTodos) {
			t.Fatalf("err = %v, want ErrInvalidTodos", err)
		}
		reqContains(t, err.Error(), `unknown status "later"`)
	})

	t.Run("ItemsIsACopy", func(t *testing.T) {
		t.Parallel()
		l := NewTodoList(nil)
		if err := l.Set(items); err != nil {
			t.Fatal(err)
		}
		got := l.Items()
		got[0].Content = "changed"
		reqEqual(t, l.Items()[0].Content, "Read the spec")
	})

	t.Run("ObserverMayReadAndSeesOrder", func(t *testing.T) {
		t.Parallel()
		var seen []string
		var l *TodoList
		l = NewTodoList(func(items []Todo) {
			// Items from inside the hook must not deadlock and must agree.
			if got := l.Items()[0].ID; got != items[0].ID {
				t.Errorf("Items() inside OnChange = %s, hook got %s", got, items[0].ID)
			}
			seen = append(seen, items[0].ID)
		})
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_ = l.Set([]Todo{{ID: fmt.Sprint(i), Content: "x", Status: TodoPending}})
			})
		}
		wg.Wait()
		reqEqual(t, len(seen), 20)
		reqEqual(t, seen[len(seen)-1], l.Items()[0].ID)
	})
}
