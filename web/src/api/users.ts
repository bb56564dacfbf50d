import { request } from './http.js';
import type {
  AuthResult,
  CreatedUser,
  InviteAcceptInput,
  NewUserInput,
  User,
  UserList,
  UserPatch,
} from '@gatehouse/admin-api/types.js';

export function listUsers(signal?: AbortSignal): Promise<UserList> {
  return request<UserList>('GET', '/api/users', { signal });
}

/** Creates the user and a one-time link (shown once) for them to set a password. */
export function inviteUser(input: Omit<NewUserInput, 'password'>): Promise<CreatedUser> {
  return request<CreatedUser>('POST', '/api/users/invite', { body: input });
}

/** A new link for an invited user who has not set a password yet (the old link stops working). */
export function reinviteUser(userId: string): Promise<CreatedUser> {
  return request<CreatedUser>('POST', '/api/users/invite', { body: { userId } });
}

export function updateUser(id: string, patch: UserPatch): Promise<{ user: User }> {
  return request<{ user: User }>('PATCH', `/api/users/${encodeURIComponent(id)}`, { body: patch });
}

/** The invited person sets their password with the link's token and is signed in. */
export function acceptInvite(token: string, password: string): Promise<AuthResult> {
  const body: InviteAcceptInput = { token, password };
  return request<AuthResult>('POST', '/api/invite/accept', { body, signOutOn401: false });
}
