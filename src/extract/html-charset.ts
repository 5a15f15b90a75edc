/**
 * A page's bytes as text, in the encoding the page says it is in: a byte order mark, else the
 * `charset` of its Content-Type, else a `<meta charset>` (or `http-equiv` Content-Type) in its first
 * 1,024 bytes, else UTF-8 (docs/guides/extraction.md). A page in Latin-1, windows-1251 or Shift_JIS
 * then reads as it shows in a browser, not as U+FFFD where its non-ASCII letters were. Labels are the
 * WHATWG Encoding Standard's (`iso-8859-1` reads as windows-1252, as browsers read it); one that names
 * no encoding this Node knows is read as UTF-8.
 */

/** How far into a page its `<meta charset>` is looked for (the HTML standard's prescan reads 1,024 bytes). */
const PRESCAN_BYTES = 1024;

const HEADER_CHARSET = /charset\s*=\s*["']?\s*([^\s;"',]+)/i;
const META_CHARSET = /<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)/i;

/** The encoding the bytes are in, by the rules above; `utf-8` when nothing says otherwise. */
export function htmlEncodingOf(bytes: Uint8Array, contentType?: string | null): string {
	if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8";
	if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le";
	if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be";
	const declared =
		(contentType ? HEADER_CHARSET.exec(contentType)?.[1] : undefined) ??
		META_CHARSET.exec(
			Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, PRESCAN_BYTES)).toString("latin1"),
		)?.[1];
	return declared === undefined ? "utf-8" : knownEncoding(declared);
}

/** The page's text (malformed bytes become U+FFFD, as `Buffer#toString("utf8")` makes them). */
export function decodeHtml(bytes: Uint8Array, contentType?: string | null): string {
	const encoding = htmlEncodingOf(bytes, contentType);
	if (encoding === "utf-8") return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
	return new TextDecoder(encoding).decode(bytes);
}

/** A label's encoding, or `utf-8` for a label no decoder here knows (a page's typo must not cost its fields). */
function knownEncoding(label: string): string {
	try {
		const encoding = new TextDecoder(label).encoding;
		// A page's `<meta charset=utf-16>` read from ASCII-compatible bytes means UTF-8 (the HTML standard).
		return encoding.startsWith("utf-16") ? "utf-8" : encoding;
	} catch {
		return "utf-8";
	}
}
