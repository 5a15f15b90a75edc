import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

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

/**
 * `pages/<id>.<ext>` under the run folder. Target ids are validated as file-name-safe by the job
 * loader, so an id can never climb out of `pages/`.
 */
export function createPageStore(runDir: string) {
	const dir = join(runDir, "pages");
	let created = false;
	return {
		/** Write one page and return its path relative to the run folder. */
		save(id: string, body: Buffer, extension: string): string {
			if (!created) {
				mkdirSync(dir, { recursive: true });
				created = true;
			}
			const name = `${id}.${extension}`;
			writeFileSync(join(dir, name), body);
			return `pages/${name}`;
		},
	};
}
export type PageStore = ReturnType<typeof createPageStore>;
