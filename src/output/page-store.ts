import { copyFileSync, linkSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
	type BodySink,
	isAtomicTemporaryName,
	makeDirectory,
	openAtomicFile,
	writeFileAtomic,
} from "../common/index.js";
import { openBodyFile, PARTIAL_BODY_PREFIX } from "./body-file.js";
import { OutputError } from "./output-error.js";

const EXTENSIONS: ReadonlyArray<[RegExp, string]> = [
	[/html/i, "html"],
	[/markdown/i, "md"],
	[/json/i, "json"],
	[/png/i, "png"],
	[/jpe?g/i, "jpg"],
	[/pdf/i, "pdf"],
	[/xml/i, "xml"],
	[/text\/plain/i, "txt"],
];

/** A file extension for content of this type; `bin` when unknown. */
export function extensionFor(contentType: string | undefined, requestedFormat: string | undefined): string {
	if (requestedFormat === "markdown") return "md";
	if (requestedFormat === "screenshot") return "png";
	if (requestedFormat === "pdf") return "pdf";
	for (const [pattern, extension] of EXTENSIONS) if (contentType && pattern.test(contentType)) return extension;
	return contentType ? "bin" : "html";
}

/** The name prefix of a page being saved by versions before `writeFileAtomic` (a killed one's leftovers). */
const OLD_SAVING_PREFIX = ".tmp-";

/** Names in `pages/` that are not pages yet: a body streamed in (`.partial-*`) or a save under way. */
function isUnfinished(name: string): boolean {
	return name.startsWith(PARTIAL_BODY_PREFIX) || isAtomicTemporaryName(name) || name.startsWith(OLD_SAVING_PREFIX);
}

/**
 * `pages/<id>.<ext>` under the run folder. Target ids are validated as file-name-safe by the job
 * loader, so an id can never climb out of `pages/`. A page appears whole or not at all: it is
 * written under a hidden name and renamed into place, so a crash never leaves a torn page behind
 * a record.
 */
export function createPageStore(runDir: string) {
	const dir = join(runDir, "pages");
	let created = false;
	const ensureDir = () => {
		if (created) return;
		try {
			makeDirectory(dir);
		} catch (error) {
			throw new OutputError(dir, error);
		}
		created = true;
	};
	const place = (from: string, name: string) => {
		try {
			renameSync(from, join(dir, name));
		} catch (error) {
			rmSync(from, { force: true });
			throw new OutputError(join(dir, name), error);
		}
	};
	return {
		/**
		 * A sink for a page body arriving too large to hold (`api`'s `BodySpill.open`): a hidden
		 * `.partial-*` file in `pages/`, written as the body arrives; `adopt` names it once its record is
		 * written, and an unfinished body's file is removed (`abort`).
		 */
		openBody(): BodySink {
			ensureDir();
			return openBodyFile(dir);
		},
		/** Write one page and return its path relative to the run folder. */
		save(id: string, body: Buffer, extension: string): string {
			ensureDir();
			const name = `${id}.${extension}`;
			try {
				writeFileAtomic(join(dir, name), body);
			} catch (error) {
				throw new OutputError(join(dir, name), error);
			}
			return `pages/${name}`;
		},
		/** Name a body already written to its file (`openBody`, on its way in) as this target's page. */
		adopt(id: string, file: string, extension: string): string {
			ensureDir();
			const name = `${id}.${extension}`;
			place(file, name);
			return `pages/${name}`;
		},
		/**
		 * Another run's stored page as this target's page (re-extraction): a hard link where the file
		 * system allows one (no copy, no space), else a copy written under a hidden name and renamed.
		 */
		share(id: string, from: string, extension: string): string {
			ensureDir();
			const name = `${id}.${extension}`;
			rmSync(join(dir, name), { force: true });
			try {
				linkSync(from, join(dir, name));
			} catch {
				try {
					const copy = openAtomicFile(join(dir, name));
					try {
						copyFileSync(from, copy.path);
					} catch (error) {
						copy.discard();
						throw error;
					}
					copy.commit();
				} catch (error) {
					throw new OutputError(join(dir, name), error);
				}
			}
			return `pages/${name}`;
		},
		/** Remove what a killed run left unfinished (no record names it): called before a run writes pages. */
		removeUnfinished(): void {
			let names: string[];
			try {
				names = readdirSync(dir);
			} catch {
				return;
			}
			for (const name of names) if (isUnfinished(name)) rmSync(join(dir, name), { force: true });
		},
	};
}
export type PageStore = ReturnType<typeof createPageStore>;
