/**
 * Show enough of a secret to tell two apart (`ab…yz`), never enough to use it.
 * Secrets of 6 characters or fewer are fully hidden.
 */
export function maskSecret(secret: string | null | undefined): string {
	if (secret === null || secret === undefined || secret === "") return "";
	if (secret.length <= 6) return "…";
	return `${secret.slice(0, 2)}…${secret.slice(-2)}`;
}

/**
 * Replace every occurrence of the given secrets in a text. Used on anything that might echo a
 * request back (error bodies, URLs) before it reaches a log, an output file or a message.
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | null | undefined>): string {
	let result = text;
	for (const secret of secrets) {
		if (secret && secret.length >= 4) result = result.split(secret).join("[redacted]");
	}
	return result;
}
