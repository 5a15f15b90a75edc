/**
 * Resolves once `check` is true, polled: what it watches is another process (a worker, a CLI run) or a
 * table that may not exist yet — a check that throws counts as "not yet". Throws, naming `what`, past
 * `timeoutMs`.
 */
export async function until(
	check: () => boolean | Promise<boolean>,
	what = "a condition",
	timeoutMs = 30_000,
	everyMs = 20,
): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (
		!(await Promise.resolve()
			.then(check)
			.catch(() => false))
	) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, everyMs));
	}
}
