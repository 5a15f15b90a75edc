import { describe, expect, it } from "vitest";
import { DEFAULT_BLOCK_SIGNATURE_SET, matchTextSignature } from "../../src/extract/index.js";

/**
 * Text block signatures (docs/behaviour.md, "Useful records") read from a page's bytes or its text: the
 * same verdict either way, the default set in the first 64 KiB of the page, a job's own texts in all of it.
 */
const DEFAULTS = DEFAULT_BLOCK_SIGNATURE_SET.text;
const FILLER = '<div class="item"><span>Café – €12,99 ☕</span><a href="/p">link</a></div>\n';

/** A page of `before` bytes (UTF-8, non-ASCII characters in it) followed by `marker`. */
function pageWith(marker: string, before: number): string {
	const head = "<html><body>";
	const copies = Math.floor((before - head.length) / Buffer.byteLength(FILLER));
	const page = head + FILLER.repeat(copies);
	return `${page}${"x".repeat(before - Buffer.byteLength(page))}${marker}</body></html>`;
}

describe("text block signatures", () => {
	it("the page's bytes and its decoded text give the same finding, case-insensitively, beside non-ASCII text", () => {
		const page = pageWith("<p>ChEcKiNg YoUr BrOwSeR bEfOrE aCcEsSiNg ünïcödé</p>", 5_000);
		expect(matchTextSignature(Buffer.from(page), DEFAULTS)).toBe("Checking your browser before accessing");
		expect(matchTextSignature(page, DEFAULTS)).toBe("Checking your browser before accessing");
		// Non-ASCII characters never count as ASCII letters in a match: "ſ" (long s) is no "s".
		const longS = "Checking your browſer before accessing";
		expect(matchTextSignature(Buffer.from(pageWith(longS, 100)), DEFAULTS)).toBeNull();
		expect(matchTextSignature(pageWith(longS, 100), DEFAULTS)).toBeNull();
	});

	it("a job's own non-ASCII text is found in the bytes as in the text", () => {
		const own = ["Zugriff verweigert – Ärger"];
		const page = pageWith("<h1>ZUGRIFF VERWEIGERT – Ärger</h1>", 2_000);
		expect(matchTextSignature(Buffer.from(page), own)).toBe("Zugriff verweigert – Ärger");
		expect(matchTextSignature(page, own)).toBe("Zugriff verweigert – Ärger");
	});

	it("the default set is searched in the page's first 64 KiB, counted in bytes; a job's own texts in all of it", () => {
		const marker = 'id="px-captcha"';
		const inside = pageWith(marker, 64 * 1024 - marker.length);
		const past = pageWith(marker, 64 * 1024 - marker.length + 1);
		expect(Buffer.byteLength(inside)).toBeGreaterThan(64 * 1024);
		for (const form of [(text: string) => text, (text: string) => Buffer.from(text)]) {
			expect(matchTextSignature(form(inside), DEFAULTS)).toBe(marker);
			expect(matchTextSignature(form(past), DEFAULTS)).toBeNull();
			// The same texts as the job's own list (another array): the whole page.
			expect(matchTextSignature(form(past), [...DEFAULTS])).toBe(marker);
			expect(matchTextSignature(form(pageWith(marker, 900_000)), [marker])).toBe(marker);
		}
	});
});
