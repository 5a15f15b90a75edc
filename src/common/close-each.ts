/**
 * Run every closer, even when one before it throws, then throw the first failure: a file that could
 * not be flushed must not leave the others open (their descriptors, their last lines).
 */
export function closeEach(closers: ReadonlyArray<() => unknown>): void {
	let failure: { readonly error: unknown } | null = null;
	for (const close of closers) {
		try {
			close();
		} catch (error) {
			failure ??= { error };
		}
	}
	if (failure) throw failure.error;
}
