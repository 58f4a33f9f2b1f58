// pam_keychain: unlocks the login keychain at login and re-wraps it when the login password changes.
//
// The module never touches the keychain itself: it runs its helper, `security login-keychain-pam`, as the user
// (never as root), with the password(s) on the helper's standard input, and reads the outcome from its exit
// status. These are the statuses the helper and the module share.
#ifndef PAM_KEYCHAIN_H
#define PAM_KEYCHAIN_H

/// The keychain was unlocked (`unlock`) or its passcode changed from the old password to the new (`change`).
#define PAM_KEYCHAIN_DONE 0
/// The keychain has no passcode: nothing to unlock or re-wrap.
#define PAM_KEYCHAIN_NO_PASSCODE 10
/// The keychain had no passcode and now has the login password as its passcode (`set_if_none`).
#define PAM_KEYCHAIN_PASSCODE_SET 11
/// The new password is empty: the passcode was left alone (removing it would destroy items).
#define PAM_KEYCHAIN_EMPTY_NEW 12
/// The password (the old one, for `change`) did not unlock the keychain: nothing changed.
#define PAM_KEYCHAIN_WRONG_PASSWORD 20
/// No keychaind answers yet (an unlock would last only for the helper's own process): try again later.
#define PAM_KEYCHAIN_NO_DAEMON 30

#endif
