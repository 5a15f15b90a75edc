import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const PREFIX = "scrapejob-tests-";

/**
 * Vitest's global set-up: every temporary folder of the run — the tests' own, the CLI children's, the
 * scan's key folders, Chromium's profiles — goes into one folder made here (TMPDIR, inherited by the
 * test processes and what they spawn), removed when the run ends. Without it each full run left ~1,600
 * folders in /tmp. Each project of vitest.config.ts calls it: the first makes the folder, the others
 * find it in TMPDIR and keep it.
 */
export default function setup(): () => void {
	if (basename(tmpdir()).startsWith(PREFIX)) return () => undefined;
	const root = mkdtempSync(join(tmpdir(), PREFIX));
	const previous = process.env.TMPDIR;
	process.env.TMPDIR = root;
	return () => {
		if (previous === undefined) delete process.env.TMPDIR;
		else process.env.TMPDIR = previous;
		rmSync(root, { recursive: true, force: true });
	};
}
