/**
 * Numbers as shops print them: "$1,299.00", "1.299,00 €", "1 299,00", "-4.50", "(12.00)", "USD 5".
 *
 * Rules, in order: the first run of digits (with the separators inside it) is the number; a minus
 * sign (or U+2212) before it, possibly before a currency symbol, makes it negative; spaces, NBSPs
 * and apostrophes between digits group thousands; with both "." and "," the later one is the
 * decimal mark; a lone "," is decimal unless exactly three digits follow it (then it groups
 * thousands: "1,299" = 1299); a lone "." is always decimal ("1.5" = 1.5, "1.299" = 1.299);
 * a separator repeated ("1.299.000", "1,299,000") groups thousands; a "." or "," right before the
 * first digit, after no letter or digit, is a decimal mark with no integer part (".99", "$.99" = 0.99;
 * "No.5" = 5).
 */
const NUMBER_RUN = /\d(?:[\d.,'\u00a0\u202f ]*\d)?/;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const MINUS_BEFORE = /[-\u2212]\s*(?:[^\d\s-]{1,3}\s*)?$/;

export function parseNumber(text: string): number | null {
	const match = NUMBER_RUN.exec(text);
	if (!match) return null;
	let start = match.index;
	let run = match[0].replace(/['\u00a0\u202f ]/g, "");
	const mark = text[start - 1];
	if ((mark === "." || mark === ",") && !LETTER_OR_DIGIT.test(text[start - 2] ?? "")) {
		run = `0${mark}${run}`;
		start -= 1;
	}
	const lastDot = run.lastIndexOf(".");
	const lastComma = run.lastIndexOf(",");
	if (lastDot !== -1 && lastComma !== -1) {
		const decimal = lastDot > lastComma ? "." : ",";
		const group = decimal === "." ? "," : ".";
		run = run.split(group).join("").replace(decimal, ".");
	} else if (lastComma !== -1) {
		const single = run.indexOf(",") === lastComma;
		const groupsThousands = !single || run.length - lastComma - 1 === 3;
		run = groupsThousands ? run.split(",").join("") : run.replace(",", ".");
	} else if (lastDot !== -1 && run.indexOf(".") !== lastDot) {
		run = run.split(".").join("");
	}
	const value = Number(run);
	if (!Number.isFinite(value)) return null;
	const before = text.slice(0, start);
	const negative =
		MINUS_BEFORE.test(before) ||
		(/\(\s*[^\d\s]{0,3}\s*$/.test(before) && /^\s*[^\d\s]{0,3}\s*\)/.test(text.slice(match.index + match[0].length)));
	return negative && value !== 0 ? -value : value;
}
