/** What a call threw (the test fails when it returned). */
export async function thrownBy(call: Promise<unknown>): Promise<unknown> {
	return call.then(
		() => {
			throw new Error("the call returned; it was expected to throw");
		},
		(error: unknown) => error,
	);
}

/** The message a call threw (the test fails when it returned). */
export async function messageOf(call: Promise<unknown>): Promise<string> {
	return ((await thrownBy(call)) as Error).message;
}
