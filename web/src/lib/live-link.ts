/** The browser's connection to Gatehouse's live stream, held by the leading tab for all of them. */
export type LinkStatus = 'connecting' | 'live' | 'reconnecting' | 'paused';
