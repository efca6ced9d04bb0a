package tool

import (
	"os"
	"path/filepath"
	"testing"
)

func TestApplyPatch(t *testing.T) {
	t.Parallel()
	const app = "import sys\n\ndef greet():\n    print(\"Hi\")\n\ndef main():\n    greet()\n    return 0\n"

	t.Run("AddUpdateMoveDelete", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("src/app.py", app)
		f.write("old.txt", "bye\n")
		got := reqOK(t, f.call("apply_patch", applyPatchArgs{Patch: `*** Begin Patch
*** Add File: docs/hello.txt
+Hello
+world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-    print("Hi")
+    print("Hello")
*** Delete File: old.txt
*** End Patch`}))
		reqEqual(t, got, "applied the patch:\nA docs/hello.txt\nM src/app.py → src/main.py\nD old.txt")
		reqEqual(t, f.read("docs/hello.txt"), "Hello\nworld\n")
		reqEqual(t, f.read("src/main.py"), "import sys\n\ndef greet():\n    print(\"Hello\")\n\ndef main():\n    greet()\n    return 0\n")
		for _, gone := range []string{"src/app.py", "old.txt"} {
			if _, err := os.Stat(filepath.Join(f.root, gone)); !os.IsNotExist(err) {
				t.Fatalf("%s still exists: %v", gone, err)
			}
		}
	})

	t.Run("SeveralHunksContextAndEndOfFile", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("app.py", app)
		reqOK(t, f.call("apply_patch", applyPatchArgs{Patch: `*** Begin Patch
*** Update File: app.py
@@
-import sys
+import os
+import sys
@@ def main():
     greet()
-    return 0
+    return 1
*** End of File
*** End Patch`}))
		reqEqual(t, f.read("app.py"), "import os\nimport sys\n\ndef greet():\n    print(\"Hi\")\n\ndef main():\n    greet()\n    return 1\n")
	})

	t.Run("WhitespaceTolerantAndCodexInput", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("a.txt", "one  \n\ttwo\nthree\n")
		// The model dropped the trailing spaces and turned the tab into
		// spaces; the file keeps its own context lines.
		reqOK(t, f.callRaw("apply_patch", `{"input":"*** Begin Patch\n*** Update File: a.txt\n one\n-  two\n+2\n three\n*** End Patch"}`))
		reqEqual(t, f.read("a.txt"), "one  \n2\nthree\n")
	})

	t.Run("HeredocWrapper", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqOK(t, f.call("apply_patch", applyPatchArgs{Patch: "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x\n+y\n*** End Patch\nEOF"}))
		reqEqual(t, f.read("x"), "y\n")
	})

	t.Run("FailsHalfWayChangesNothing", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("a.txt", "alpha\nbeta\n")
		f.write("b.txt", "gamma\ndelta\n")
		msg := reqErr(t, f.call("apply_patch", applyPatchArgs{Patch: `*** Begin Patch
*** Update File: a.txt
-alpha
+ALPHA
*** Add File: c.txt
+new
*** Update File: b.txt
@@
 gamma
-epsilon
+EPSILON
*** End Patch`}))
		reqContains(t, msg, "hunk 1 of 1 for b.txt did not apply", "-epsilon", "No file was changed")
		reqEqual(t, f.read("a.txt"), "alpha\nbeta\n")
		reqEqual(t, f.read("b.txt"), "gamma\ndelta\n")
		if _, err := os.Stat(filepath.Join(f.root, "c.txt")); !os.IsNotExist(err) {
			t.Fatalf("c.txt was created: %v", err)
		}
	})

	t.Run("WriteFailureRollsBack", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("a.txt", "alpha\n")
		f.write("blocker", "x") // a file where the patch needs a directory
		msg := reqErr(t, f.call("apply_patch", applyPatchArgs{Patch: `*** Begin Patch
*** Update File: a.txt
-alpha
+ALPHA
*** Add File: blocker/inner/c.txt
+c
*** End Patch`}))
		reqContains(t, msg, "writing", "No file was changed")
		reqEqual(t, f.read("a.txt"), "alpha\n")
	})

	t.Run("BadPatches", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("a.txt", "a\n")
		for patch, want := range map[string]string{
			"":                                     "must start with \"*** Begin Patch\"",
			"*** Begin Patch\n*** Add File: x\n+y": "must end with \"*** End Patch\"",
			"*** Begin Patch\n*** Frobnicate: x\n*** End Patch":                 "expected \"*** Add File: \"",
			"*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch":          "every line of an added file starts with \"+\"",
			"*** Begin Patch\n*** Update File: a.txt\n*** End Patch":            "no hunk",
			"*** Begin Patch\n*** Update File: a.txt\n?a\n*** End Patch":        "a hunk line starts with",
			"*** Begin Patch\n*** Update File: nope.txt\n-a\n+b\n*** End Patch": "cannot update nope.txt: it does not exist",
			"*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch":         "cannot delete nope.txt: it does not exist",
			"*** Begin Patch\n*** End Patch":                                    "changes no file",
		} {
			msg := reqErr(t, f.call("apply_patch", applyPatchArgs{Patch: patch}))
			reqContains(t, msg, want)
		}
		reqContains(t, reqErr(t, f.callRaw("apply_patch", `{"patch":"x","input":"y"}`)), "not both")
		reqEqual(t, f.read("a.txt"), "a\n")
	})

	t.Run("TargetNamesEveryFile", func(t *testing.T) {
		t.Parallel()
		tg := applyPatchArgs{Patch: "*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** Delete File: c\n*** End Patch"}.Target()
		if len(tg.Paths) != 3 || tg.Paths[0] != "a" || tg.Paths[1] != "b" || tg.Paths[2] != "c" {
			t.Fatalf("paths %v", tg.Paths)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Parallel()
	f := setupTools(t)
	f.write("a.txt", "a")
	f.write("dir/b.txt", "b")
	if err := os.Symlink(filepath.Join(f.root, "dir", "b.txt"), filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	got := reqOK(t, f.call("delete", deleteArgs{Paths: []string{"a.txt", "link", "gone.txt"}, Reason: "cleanup"}))
	reqEqual(t, got, "deleted: a.txt, link\nalready absent: gone.txt")
	reqEqual(t, f.read("dir/b.txt"), "b") // the symlink went, not its target
	msg := reqErr(t, f.call("delete", deleteArgs{Paths: []string{"dir"}, Reason: "cleanup"}))
	reqContains(t, msg, "dir is a directory")
	reqContains(t, reqErr(t, f.call("delete", deleteArgs{Paths: []string{"dir/b.txt"}, Reason: " "})), "reason is empty")
	reqEqual(t, f.read("dir/b.txt"), "b")
}
