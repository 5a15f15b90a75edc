import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Vitest's global set-up: every temporary folder of the run — the tests' own, the CLI children's, the
 * scan's key folders, Chromium's profiles — goes into one folder made here (TMPDIR, inherited by the
 * test processes and what they spawn), removed when the run ends. Without it each full run left ~1,600
 * folders in /tmp.
 */
export default function setup(): () => void {
	const root = mkdtempSync(join(tmpdir(), "scrapejob-tests-"));
	const previous = process.env.TMPDIR;
	process.env.TMPDIR = root;
	return () => {
		if (previous === undefined) delete process.env.TMPDIR;
		else process.env.TMPDIR = previous;
		rmSync(root, { recursive: true, force: true });
	};
}
