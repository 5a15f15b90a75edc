import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createGunzip } from "node:zlib";
import { Parser } from "htmlparser2";

/** What a sitemap file lists: pages (`<urlset>`) or further sitemap files (`<sitemapindex>`). */
export type SitemapKind = "urlset" | "sitemapindex";

/** `<loc>` values handed over in batches of this many (journalled together, then dropped). */
const LOC_BATCH = 1024;

/** gzip's magic bytes: a `.xml.gz` file, or a `Content-Encoding: gzip` body passed on undecoded. */
async function isGzip(path: string): Promise<boolean> {
	const file = await open(path, "r");
	try {
		const head = Buffer.alloc(2);
		const { bytesRead } = await file.read(head, 0, 2, 0);
		return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
	} finally {
		await file.close();
	}
}

/** The file's bytes, gunzipped when they are gzip: a stream, never the whole document. */
async function openText(path: string): Promise<Readable> {
	const raw = createReadStream(path);
	return (await isGzip(path)) ? raw.pipe(createGunzip()) : raw;
}

/**
 * Read a stored sitemap file as a stream (a streaming XML parser over chunks, gzip through node:zlib):
 * `onLocs` gets its `<loc>` values a batch at a time, in document order, so a file of any size holds
 * one batch in memory; it returns false to stop reading there. Returns the root's kind (null when the
 * root is neither: nothing is listed).
 * Namespace prefixes (`<sm:loc>`) and entities (`&amp;`) are read as XML says.
 */
export async function readSitemapFile(
	path: string,
	onLocs: (locs: string[], kind: SitemapKind) => boolean,
): Promise<SitemapKind | null> {
	let kind: SitemapKind | null = null;
	let rootSeen = false;
	let inLoc = false;
	let loc = "";
	let batch: string[] = [];
	let stopped = false;
	const localName = (name: string) => name.slice(name.indexOf(":") + 1).toLowerCase();
	const parser = new Parser(
		{
			onopentag(name) {
				const local = localName(name);
				if (!rootSeen) {
					rootSeen = true;
					if (local === "urlset" || local === "sitemapindex") kind = local;
				}
				if (local === "loc" && kind !== null) {
					inLoc = true;
					loc = "";
				}
			},
			ontext(text) {
				if (inLoc) loc += text;
			},
			onclosetag(name) {
				if (!inLoc || localName(name) !== "loc") return;
				inLoc = false;
				const value = loc.trim();
				if (value !== "") batch.push(value);
				if (batch.length >= LOC_BATCH && kind !== null && !stopped) {
					stopped = !onLocs(batch, kind);
					batch = [];
				}
			},
		},
		{ xmlMode: true, decodeEntities: true },
	);
	const decoder = new StringDecoder("utf8");
	const stream = await openText(path);
	try {
		for await (const chunk of stream) {
			parser.write(decoder.write(chunk as Buffer));
			if (stopped) break;
		}
	} catch {
		// A gzip body cut short or damaged: what was read before the damage stands.
	} finally {
		stream.destroy();
	}
	if (!stopped) parser.end(decoder.end());
	if (batch.length > 0 && kind !== null && !stopped) onLocs(batch, kind);
	return kind;
}

/** robots.txt's `Sitemap:` lines, read line by line from the stored file. */
export async function readRobotsSitemaps(path: string): Promise<string[]> {
	const found: string[] = [];
	const decoder = new StringDecoder("utf8");
	let carry = "";
	const take = (line: string) => {
		const match = /^\s*sitemap\s*:\s*(\S+)/i.exec(line);
		if (match) found.push(match[1]!);
	};
	const stream = await openText(path);
	try {
		for await (const chunk of stream) {
			const lines = (carry + decoder.write(chunk as Buffer)).split(/\r?\n/);
			carry = lines.pop() ?? "";
			// A line longer than any robots.txt has: dropped rather than held.
			if (carry.length > 64 * 1024) carry = "";
			for (const line of lines) take(line);
		}
	} catch {
		// As above: what was read stands.
	} finally {
		stream.destroy();
	}
	take(carry + decoder.end());
	return found;
}
