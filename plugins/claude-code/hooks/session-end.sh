#!/usr/bin/env bash
# skillgit SessionEnd hook: remember the finished Claude Code session for the next `skillgit sleep`.
#
# Contract: cheap (a few milliseconds, no network), never blocks or fails the session (always exits 0, reads stdin
# for at most 2 s), never sends anything anywhere. It appends one JSON line
#   {"session_id": …, "transcript_path": …, "cwd": …, "ended": "<UTC ISO-8601>"}
# to <git-common-dir>/skillgit/sleep/inbox.jsonl of the session's repository, and does nothing outside a git
# repository, nor for skillgit's own replays (SKILLGIT_REPLAY set: they are not a person's work). Values are
# copied as the JSON string literals Claude Code sent (escapes kept), so the line is valid JSON whatever the paths
# contain. One line per session and transcript: with the hook installed twice (user and project settings, or the
# plugin too) both copies run at once, so the check and the append happen under a lock (an atomic mkdir, given up
# after ~1 s), and a session already waiting in the inbox is not added again (its transcript is read whole). A
# session that left no transcript (`claude mcp list` and other subcommands end a "session" that never wrote one) is
# not recorded; a path holding JSON escapes is kept as sent (harvest checks it).
[ -n "${SKILLGIT_REPLAY:-}" ] && exit 0
{
  payload=""
  IFS= read -r -d '' -t 2 payload
  field() {  # sets REPLY to the raw JSON string value of key $1 ("" when absent)
    local re='"'"$1"'"[[:space:]]*:[[:space:]]*"(([^"\\]|\\.)*)"'
    REPLY=""
    if [[ $payload =~ $re ]]; then REPLY=${BASH_REMATCH[1]}; fi
  }
  field session_id; session_id=$REPLY
  field transcript_path; transcript_path=$REPLY
  field cwd; cwd=$REPLY
  if [ -n "$session_id" ]; then
    dir=${cwd//\\\\/\\}
    dir=${dir//\\\"/\"}
    [ -n "$dir" ] && [ -d "$dir" ] || dir=$PWD
    common=$(git -C "$dir" rev-parse --git-common-dir 2>/dev/null)
    if [ -n "$common" ]; then
      case $common in
        /* | [A-Za-z]:*) ;;
        *) common=$(cd "$dir" && cd "$common" && pwd) ;;
      esac
      ended=$(date -u +%Y-%m-%dT%H:%M:%SZ)
      inbox="$common/skillgit/sleep"
      tp=$transcript_path
      case $tp in
        *\\*) ;;  # escapes: harvest decodes and checks it
        \~/*) [ -f "$HOME/${tp#\~/}" ] || exit 0 ;;
        /*) [ -f "$tp" ] || exit 0 ;;
        *) [ -f "$dir/$tp" ] || exit 0 ;;
      esac
      key=$(printf '{"session_id":"%s","transcript_path":"%s",' "$session_id" "$transcript_path")
      if mkdir -p "$inbox"; then
        tries=0
        until mkdir "$inbox/inbox.jsonl.lock" 2>/dev/null; do
          tries=$((tries + 1))
          if [ "$tries" -ge 20 ]; then rmdir "$inbox/inbox.jsonl.lock"; break; fi  # left by a killed hook
          sleep 0.05
        done
        grep -qF -e "$key" "$inbox/inbox.jsonl" ||
          printf '%s"cwd":"%s","ended":"%s"}\n' "$key" "$cwd" "$ended" >>"$inbox/inbox.jsonl"
        rmdir "$inbox/inbox.jsonl.lock"
      fi
    fi
  fi
} >/dev/null 2>&1
exit 0
