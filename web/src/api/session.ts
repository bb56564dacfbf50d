import { request } from './http.js';
import type { AuthResult, SessionInfo } from '@gatehouse/admin-api/types.js';

export function getSession(signal?: AbortSignal): Promise<SessionInfo> {
  return request<SessionInfo>('GET', '/api/session', { signal, signOutOn401: false });
}

/** First-run: trade the one-time setup token for an admin password and a session. */
export function completeSetup(token: string, password: string): Promise<AuthResult> {
  return request<AuthResult>('POST', '/api/setup', { body: { token, password }, signOutOn401: false });
}

/** Without a name: the first admin (the one password of earlier versions). */
export function signIn(password: string, name = ''): Promise<AuthResult> {
  const body = name.trim() === '' ? { password } : { name: name.trim(), password };
  return request<AuthResult>('POST', '/api/login', { body, signOutOn401: false });
}

export function signOut(): Promise<AuthResult> {
  return request<AuthResult>('POST', '/api/logout', { signOutOn401: false });
}

/** Every other session is signed out by the server; this one stays. */
export function changePassword(currentPassword: string, newPassword: string): Promise<Record<string, never>> {
  return request('POST', '/api/password', { body: { currentPassword, newPassword }, signOutOn401: false });
}
