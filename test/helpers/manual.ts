import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/** The repository's root. */
export const ROOT = join(import.meta.dirname, "..", "..");

/**
 * The user's manual: README.md and every Markdown file under docs/ (the generated API reference,
 * docs/api/, excluded), as paths relative to the repository, README first.
 */
export function manualFiles(): string[] {
	const found: string[] = [];
	const walk = (dir: string): void => {
		for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
			const path = join(dir, entry.name);
			if (entry.isDirectory()) {
				if (relative(ROOT, path) !== join("docs", "api")) walk(path);
			} else if (entry.name.endsWith(".md")) found.push(relative(ROOT, path));
		}
	};
	walk(join(ROOT, "docs"));
	return ["README.md", ...found];
}

/** One file of the manual, by its path relative to the repository (`docs/guides/extraction.md`). */
export function readDoc(path: string): string {
	return readFileSync(join(ROOT, path), "utf8");
}
