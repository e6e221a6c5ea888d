/** The flags Debian's Chromium runs with for the journeys and the benchmark. */
export const chromiumArgs: string[];
