import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createGunzip } from "node:zlib";
import { lazyModule } from "../common/index.js";
import { ROBOTS_MAX_BYTES } from "./robots-rules.js";

/** The XML parser, loaded by the first sitemap read: a run without sitemaps never parses one (see `lazyModule`). */
const htmlparser2 = lazyModule<typeof import("htmlparser2")>("htmlparser2");

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
 * The bounds of one sitemap file (sitemaps.org: 50 MB uncompressed and 50,000 URLs a file), so a
 * gzip bomb or a runaway file costs bounded time and memory: reading stops there, the rest unread.
 */
export const SITEMAP_MAX_BYTES = 50 * 1024 * 1024;
export const SITEMAP_MAX_URLS = 50_000;
/** A `<loc>` longer than this is dropped as it is read (sitemaps.org: under 2,048 characters). */
export const SITEMAP_MAX_LOC_CHARS = 8 * 1024;

export interface SitemapBounds {
	/** Bytes read at most, after gunzip. @default SITEMAP_MAX_BYTES */
	readonly maxBytes?: number;
	/** `<loc>`s read at most. @default SITEMAP_MAX_URLS */
	readonly maxUrls?: number;
}

/** How reading a file ended: its root's kind (null: neither, nothing listed) and the bound it met, if any. */
export interface SitemapFileRead {
	readonly kind: SitemapKind | null;
	readonly bound: "bytes" | "urls" | null;
	/** `<loc>`s dropped for their length. */
	readonly longLocs: number;
}

/**
 * Read a stored sitemap file as a stream (a streaming XML parser over chunks, gzip through node:zlib):
 * `onLocs` gets its `<loc>` values a batch at a time, in document order, so a file of any size holds
 * one batch in memory; it returns false to stop reading there. Reading also stops at the file's bounds.
 * Namespace prefixes (`<sm:loc>`) and entities (`&amp;`) are read as XML says.
 */
export async function readSitemapFile(
	path: string,
	onLocs: (locs: string[], kind: SitemapKind) => boolean,
	bounds: SitemapBounds = {},
): Promise<SitemapFileRead> {
	const maxBytes = bounds.maxBytes ?? SITEMAP_MAX_BYTES;
	const maxUrls = bounds.maxUrls ?? SITEMAP_MAX_URLS;
	let kind: SitemapKind | null = null;
	let rootSeen = false;
	let inLoc = false;
	let loc = "";
	let batch: string[] = [];
	let stopped = false;
	let bound: SitemapFileRead["bound"] = null;
	let urls = 0;
	let longLocs = 0;
	const localName = (name: string) => name.slice(name.indexOf(":") + 1).toLowerCase();
	const parser = new (htmlparser2().Parser)(
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
				// Past its bound a `<loc>` is dropped: a giant one must not grow one string without end.
				if (inLoc && loc.length <= SITEMAP_MAX_LOC_CHARS) loc += text;
			},
			onclosetag(name) {
				if (!inLoc || localName(name) !== "loc" || stopped) return;
				inLoc = false;
				const value = loc.trim();
				loc = "";
				if (value.length > SITEMAP_MAX_LOC_CHARS) longLocs += 1;
				else if (value !== "") {
					batch.push(value);
					urls += 1;
				}
				if (urls >= maxUrls) {
					bound = "urls";
					stopped = true;
				}
				if ((batch.length >= LOC_BATCH || stopped) && kind !== null) {
					if (!onLocs(batch, kind)) stopped = true;
					batch = [];
				}
			},
		},
		{ xmlMode: true, decodeEntities: true },
	);
	const decoder = new StringDecoder("utf8");
	const stream = await openText(path);
	let bytes = 0;
	try {
		for await (const chunk of stream) {
			let bytesIn = chunk as Buffer;
			if (bytes + bytesIn.length > maxBytes) {
				bytesIn = bytesIn.subarray(0, maxBytes - bytes);
				bound = "bytes";
			}
			bytes += bytesIn.length;
			parser.write(decoder.write(bytesIn));
			if (stopped || bound === "bytes") break;
		}
	} catch {
		// A gzip body cut short or damaged: what was read before the damage stands.
	} finally {
		// Ends the gunzip too: a bomb is inflated no further than the bound.
		stream.destroy();
	}
	// Cut at the byte bound, the document is closed unread: ending it would hand over a cut `<loc>`.
	if (!stopped && bound === null) {
		try {
			parser.end(decoder.end());
		} catch {
			// As above.
		}
	}
	if (batch.length > 0 && kind !== null && !stopped) onLocs(batch, kind);
	return { kind, bound, longLocs };
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
	let bytes = 0;
	try {
		for await (const chunk of stream) {
			// The bound robots rules are read to (RFC 9309): the same lines, never more.
			if (bytes >= ROBOTS_MAX_BYTES) break;
			const bytesIn = (chunk as Buffer).subarray(0, ROBOTS_MAX_BYTES - bytes);
			bytes += bytesIn.length;
			const lines = (carry + decoder.write(bytesIn)).split(/\r?\n/);
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
