/** signInLink is the link `go tool task up` prints for token, opening next after signing in. */
export function signInLink(CONSOLE: string, API: string, token: string, next?: string): Promise<string>;
