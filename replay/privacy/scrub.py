"""Secret scrubbing: defence in depth for any text ctxreplay writes out.

``find(text)`` lists the secrets in a text, ``scrub(text)`` replaces each by
``[REDACTED:<rule>]``. Patterns run on google-re2 (linear time, no catastrophic
backtracking) over the UTF-8 bytes of the text, and a single ``re2.Set`` pass tells which
rules can match at all, so clean text costs one scan plus the entropy scan.

Rules (``RULES`` lists them with a description; ``docs/privacy.md`` explains each):

* provider formats with a recognisable prefix: AWS key ids, GCP API keys, GitHub, GitLab,
  Slack, Stripe, OpenAI, Anthropic, Google OAuth, npm, PyPI, Hugging Face, SendGrid tokens,
  Slack webhooks, PEM private key blocks, JWTs;
* secrets recognised by their context: AWS secret keys, Azure storage/service-bus keys,
  SAS signatures and client secrets, GCP service-account ``private_key_id``, passwords in
  database URLs and in any ``scheme://user:pass@host``, ``Authorization``/``Bearer``
  headers, ``password=``/``secret:``/``TOKEN=``/``api_key:`` assignments in code, config
  and ``.env`` files and ``--password`` command-line flags;
* ``high_entropy`` (``replay.privacy.entropy``): base64/base62-looking runs of 20-300 characters that mix upper case,
  lower case and digits, switch character class often (random strings do, identifiers do
  not) and have high Shannon entropy for their length.

Deliberately **not** flagged as high entropy: hex-only strings (git SHAs, content hashes,
digests, hex UUIDs), UUIDs, Subresource-Integrity / go.sum hashes (``sha512-...``,
``h1:...``), base64 after ``base64,`` (data URIs) and image payloads (PNG/JPEG/GIF/WebP/SVG
magic), and runs longer than 300 characters (blobs, not credentials). A hex secret is only
caught when its context says so (``SECRET_KEY=``, ``private_key_id``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import re2

from replay.privacy.entropy import HIGH_ENTROPY, entropy_spans, has_digit, has_lower, has_upper, looks_random

__all__ = ["Finding", "Rule", "RULES", "find", "looks_random", "scrub", "redaction"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret: the rule that found it and its [start, end) span in the text (characters)."""

    rule: str
    start: int
    end: int


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    pattern: str
    # Validates the captured secret (bytes) and may veto the match.
    check: Callable[[bytes, bytes], bool] | None = None
    # Cheap pattern that every match contains: one re2.Set pass over the text tells which
    # rules need their full pattern run at all.
    anchor: str = ""


def redaction(rule: str) -> str:
    return f"[REDACTED:{rule}]"


# --- validators ----------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    b.lower()
    for b in (
        b"null", b"none", b"nil", b"true", b"false", b"undefined", b"string", b"str", b"number",
        b"boolean", b"bool", b"required", b"optional", b"password", b"passwd", b"secret", b"token",
        b"hidden", b"text", b"bearer", b"basic", b"example", b"changeme", b"change_me", b"xxx",
        b"redacted", b"placeholder", b"your_password", b"your_token", b"your_api_key", b"yourpassword",
        b"mypassword", b"my_password", b"secret_key", b"api_key", b"apikey", b"access_token", b"pass",
        b"dummy", b"test", b"testing", b"sample", b"foobar", b"default", b"empty", b"unset", b"todo",
        b"process.env", b"os.environ", b"any", b"object", b"bytes", b"int", b"char",
    )
)
_REF_PREFIXES = (b"$", b"{{", b"<", b"%(", b"%s", b"process.env", b"os.environ", b"os.getenv", b"env(",
                 b"env.", b"getenv", b"[REDACTED", b"***", b"...", b"#{", b"@{", b"vault:", b"secrets.",
                 b"ENV[", b"settings.", b"config.", b"self.", b"this.", b"args.", b"opts.", b"options.")
_IDENT_RX = re2.compile(rb"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?$")
_LOWER_WORDS_RX = re2.compile(rb"^[a-z]+(?:[_.-][a-z]+)*$")
_CAMEL_RX = re2.compile(rb"^[a-z]+(?:[A-Z][a-z]+)+[0-9]?$")
_CALL_RX = re2.compile(rb"^[A-Za-z_][A-Za-z0-9_.]*\([A-Za-z0-9_.,'\" ]*\)$")
_SAME_CHAR_RX = re2.compile(rb"^(?:x+|X+|\*+|\.+|-+|_+|0+|#+)$")


def _not_placeholder(value: bytes) -> bool:
    v = value.strip(b"\"'`,;")
    if len(v) < 4:
        return False
    low = v.lower()
    if low in _PLACEHOLDER_WORDS or _SAME_CHAR_RX.match(v):
        return False
    if v.startswith(_REF_PREFIXES) or low.startswith((b"your", b"my-", b"my_", b"<", b"insert", b"replace")):
        return False
    if b"REDACTED" in v.upper() or b"${" in v or b"{{" in v or (v.startswith(b"<") and v.endswith(b">")) or _CALL_RX.match(v):
        return False
    return True


def _check_quoted_value(_key: bytes, value: bytes) -> bool:
    """A quoted literal assigned to a password/secret/token name in code or config."""
    if not _not_placeholder(value):
        return False
    # Lower-case words (``"access_token"``, ``"current-password"``) are labels, not secrets,
    # unless long enough to be a passphrase.
    if _LOWER_WORDS_RX.match(value) and len(value) < 24:
        return False
    if _CAMEL_RX.match(value):  # userPassword, hashedToken: a variable, not a literal
        return False
    return True


_TYPE_NAME_RX = re2.compile(rb"^[A-Z][a-z]+(?:[A-Z0-9][a-z0-9]*)+$|^[A-Za-z]+(?:-[A-Za-z]+)+$")


_CODE_PUNCT_RX = re2.compile(rb"^[!&*]|\?\.|\|\||&&|=>|\(\)|\)$")
_CAMEL_ANY_RX = re2.compile(rb"^_*[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+$")


def _check_unquoted_value(key: bytes, value: bytes) -> bool:
    """``password: value`` without quotes: YAML/INI, but also TS/JS code (``privateKey: Uint8Array,``,
    ``hasToken: !!state.token``), where the value is an expression, not a literal."""
    v = value.rstrip(b",;")
    if _IDENT_RX.match(v) or _TYPE_NAME_RX.match(v) or _CAMEL_ANY_RX.match(v) or _CODE_PUNCT_RX.search(v):
        return False
    if not _check_quoted_value(key, v):
        return False
    return has_digit(v) + has_upper(v) + has_lower(v) >= 2 or len(v) >= 12


_FLAG_RX = re2.compile(rb"^--?[A-Za-z][A-Za-z0-9-]*$")


def _check_flag_value(key: bytes, value: bytes) -> bool:
    """``--password VALUE``: VALUE must not be the next flag."""
    return not _FLAG_RX.match(value) and _check_env_value(key, value)


def _check_env_value(_key: bytes, value: bytes) -> bool:
    """A value in ``NAME_PASSWORD=...`` (env files, shell): any literal counts."""
    return _not_placeholder(value) and not _IDENT_RX.match(value)


def _check_token(_key: bytes, value: bytes) -> bool:
    """Random-looking token: mixed character classes, not a placeholder."""
    if not _not_placeholder(value):
        return False
    classes = has_digit(value) + has_upper(value) + has_lower(value)
    return classes >= 2 and not _LOWER_WORDS_RX.match(value)


def _check_url_password(_key: bytes, value: bytes) -> bool:
    low = value.lower()
    if low in (b"password", b"pass", b"passwd", b"pwd", b"secret", b"x", b"xxx", b"***", b"****"):
        return False
    return _not_placeholder(value) or (len(value) >= 4 and not value.startswith((b"$", b"<", b"{", b"%")))


_PATHLIKE_RX = re2.compile(rb"^(?:[/~\\]|\.\.?/|[A-Za-z]:[\\/])")
_LETTERS_RX = re2.compile(rb"^[A-Za-z]+$")


def _check_inline_value(key: bytes, value: bytes) -> bool:
    """``password=VALUE`` without quotes anywhere in a line. Unlike ``password: X`` (a type
    annotation in TS), ``=`` assigns, so a value with a digit or a symbol is a literal; values
    made only of letters (``PasswordInput``, ``hashed``), dotted names and paths
    (``PWD=/home/...``) are not taken for secrets."""
    v = value.rstrip(b".:")
    if len(v) < 4 or _PATHLIKE_RX.match(v) or _IDENT_RX.match(v) or _CODE_PUNCT_RX.search(v) or b"**" in v:
        return False
    if not _not_placeholder(v):
        return False
    if _LETTERS_RX.match(v) or (_LOWER_WORDS_RX.match(v) and len(v) < 24):
        return False
    return True


def _check_query_value(key: bytes, value: bytes) -> bool:
    """A URL query credential: any literal that is not a placeholder or a short word."""
    v = value.rstrip(b".,;:)")
    if not _not_placeholder(v) or v.upper().startswith((b"%7B", b"%24", b"%3C")):
        return False
    return not (_LOWER_WORDS_RX.match(v) and len(v) < 24)


def _check_cli_value(key: bytes, value: bytes) -> bool:
    """``mysql -pSECRET`` / ``sshpass -p SECRET``: any literal of 3+ characters that is not a
    variable or placeholder."""
    v = value.strip()
    if len(v) < 3 or v.startswith((b"$", b"<", b"{", b"%", b"*", b"`")) or b"${" in v:
        return False
    return v.lower() not in _PLACEHOLDER_WORDS and not _SAME_CHAR_RX.match(v)


def _check_sk(_key: bytes, value: bytes) -> bool:
    return has_digit(value) and has_upper(value) and has_lower(value)


# --- rules ---------------------------------------------------------------------------
# Each pattern has at most a few capturing groups; the first non-empty group is the
# secret (what is redacted). Without groups the whole match is the secret. ``E`` is the
# end of a token: a non-token character or the end of the text (RE2 has no lookahead).

_E = r"(?:[^A-Za-z0-9_\-]|$)"
_E64 = r"(?:[^A-Za-z0-9/+=]|$)"
_E_ALNUM = r"(?:[^A-Za-z0-9]|$)"  # a fixed-length token may run into ``_``/``-`` (``AKIA..._prod``)
_KW = (r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|"
       r"private[_-]?key|client[_-]?secret|credentials?|auth[_-]?token|secret[_-]?key)")
_KW_UP = (r"(?:PASSWORD|PASSWD|PASSPHRASE|PWD|SECRET|TOKEN|API_?KEY|APIKEY|ACCESS_?KEY|AUTH_?KEY|PRIVATE_?KEY|"
          r"CLIENT_?SECRET|CREDENTIALS?|AUTH_?TOKEN|SECRET_?KEY|PAT)")

def _token_rule(name: str, description: str, token: str, end: str = "", *, anchor: str,
                check: Callable[[bytes, bytes], bool] | None = None) -> Rule:
    """A credential recognised by its own form (a provider prefix): ``token`` from a word
    start, captured as the secret, then ``end`` (``_E``: the token's alphabet ends there)."""
    # ``_`` counts as a word start too: a key pasted into an identifier (``mcp__x__AKIA...``)
    return Rule(name, description, r"(?:\b|_)(" + token + ")" + end, check, anchor=anchor)


RULES: tuple[Rule, ...] = (
    Rule("private_key", "PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP), also unterminated or with escaped newlines",
         r"(?s)(-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:.,-]*))", anchor='PRIVATE KEY'),
    _token_rule("aws_access_key_id", "AWS access key id (AKIA/ASIA/... + 16 base32 characters)",
                r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|AKPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}", _E_ALNUM,
                anchor='A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|KPA|NPA|NVA|ROA|PKA|SCA)[A-Z0-9]{16}'),
    Rule("aws_secret_access_key", "AWS secret access key (40 base64 characters after an aws_secret_access_key / SecretAccessKey name)",
         r"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*(?:=|:|=>)?\s*[\"']?([A-Za-z0-9/+]{40})" + _E64, anchor='(?i)secret_?access_?key'),
    _token_rule("gcp_api_key", "Google/GCP API key (AIza + 35 characters)", r"AIza[0-9A-Za-z_\-]{35}", _E, anchor='AIza'),
    Rule("gcp_service_account", "GCP service-account JSON private_key_id",
         r"\"private_key_id\"\s*:\s*\"([0-9a-f]{40})\"", anchor='private_key_id'),
    _token_rule("google_oauth", "Google OAuth access token (ya29.), refresh token (1//0), client secret (GOCSPX-)",
                r"ya29\.[0-9A-Za-z_\-]{20,}|1//0[0-9A-Za-z_\-]{30,}|GOCSPX-[0-9A-Za-z_\-]{20,}", anchor='ya29\\.|1//0|GOCSPX-'),
    Rule("azure_key", "Azure storage AccountKey / service-bus SharedAccessKey / key assignments in connection strings",
         r"(?i)(?:AccountKey|SharedAccessKey|azure[_-]?(?:storage[_-]?)?(?:account[_-]?)?key)\s*[=:]\s*[\"']?([A-Za-z0-9+/]{30,}={0,2})", anchor='(?i)accountkey|sharedaccesskey|azure'),
    Rule("azure_sas_signature", "Azure SAS token signature (sig= in a URL query)",
         r"[?&]sig=([A-Za-z0-9%+/=]{30,})", anchor='sig='),
    Rule("azure_client_secret", "Azure AD client secret (xxx8Q~...)",
         r"(?:^|[^A-Za-z0-9_~.\-])([A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})" + r"(?:[^A-Za-z0-9_~.\-]|$)", anchor='[0-9]Q~'),
    _token_rule("github_token", "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
                r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}", _E,
                anchor='gh[pousr]_|github_pat_'),
    _token_rule("gitlab_token", "GitLab token (glpat-, glptt-, gldt-, glrt-, ... and GR1348941 runner tokens)",
                r"(?:glpat|glptt|gldt|glrt|glcbt|glsoat|glffct|glimt|glagent|gloas)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,}",
                anchor='gl[a-z]{1,6}-|GR1348941'),
    _token_rule("slack_token", "Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xoxe-, xapp-)",
                r"xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,}", anchor='xox[abposre]-|xapp-'),
    Rule("slack_webhook", "Slack incoming-webhook / workflow URL",
         r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+\-]{20,})", anchor='hooks\\.slack\\.com'),
    _token_rule("stripe_key", "Stripe secret/restricted/publishable key (sk_live_, rk_test_, ...) and webhook secret (whsec_)",
                r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}", _E,
                anchor='[spr]k_(?:live|test)_|whsec_'),
    _token_rule("anthropic_key", "Anthropic API key (sk-ant-...)", r"sk-ant-[A-Za-z0-9_\-]{20,}", anchor='sk-ant-'),
    _token_rule("openai_key", "OpenAI API key (sk-, sk-proj-, sk-svcacct-, sk-admin-)",
                r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", anchor='sk-', check=_check_sk),
    Rule("npm_token", "npm access token (npm_) and .npmrc _authToken", r"\b(npm_[A-Za-z0-9]{36})" + _E
         + r"|_auth(?:Token)?\s*=\s*[\"']?([^\s\"'$]{16,})", anchor='npm_|_auth'),
    _token_rule("pypi_token", "PyPI API token (pypi-AgE...)", r"pypi-[A-Za-z0-9_\-]{50,}", anchor='pypi-'),
    _token_rule("huggingface_token", "Hugging Face token (hf_)", r"hf_[A-Za-z0-9]{30,}", _E, anchor='hf_'),
    _token_rule("sendgrid_key", "SendGrid API key (SG.x.y)", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}", _E,
                anchor='SG\\.'),
    _token_rule("jwt", "JSON Web Token (eyJ... . eyJ... . signature)",
                r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", anchor='eyJ'),
    Rule("db_connection_password", "password in a database URL (postgres, mysql, mariadb, mongodb(+srv), redis, amqp, mssql, ...)",
         r"(?i)\b(?:jdbc:)?(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|"
         r"cockroachdb|clickhouse|couchbase|neo4j(?:\+s)?)://[^\s:@/'\"`]*:([^\s@/'\"`]+)@", _check_url_password, anchor='://'),
    Rule("url_password", "password in any URL with credentials (scheme://user:pass@host)",
         r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:@/'\"`<>]+:([^\s@/'\"`<>]+)@", _check_url_password, anchor='://'),
    Rule("bearer_token", "credentials in an Authorization / X-Api-Key / X-Auth-Token header, or after Bearer",
         r"(?i:\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic|apikey|api-key)\s+([A-Za-z0-9._~+/\-]{8,}=*))"
         r"|(?i:\bbearer\s+([A-Za-z0-9._~+/\-]{20,}=*))"
         r"|(?i:\bx-(?:api-?key|auth-token|access-token|token)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9._~+/\-]{12,}=*))", _check_token, anchor='(?i)bearer|authorization|x-'),
    Rule("secret_assignment", "password/secret/token/api_key assigned a literal in code, config, .env files or CLI flags",
         # 1, 2: a quoted value after a secret-ish name: password = "...", "apiKey": '...', token => "..."
         r"(?i:\b[A-Za-z0-9_.\-]*?" + _KW + r"(?:[_\-]?(?:key|value|str|string|b64|base64))?[\"']?\s*(?:=|:|:=|=>)\s*"
         r"(?:\"([^\"\s\\]{4,300})\"|'([^'\s\\]{4,300})'))"
         # 3: env / shell: DB_PASSWORD=..., export GITHUB_TOKEN=...
         r"|(?m:^[ \t]*(?:export[ \t]+|set[ \t]+)?[A-Z0-9_]*" + _KW_UP + r"(?:_(?:KEY|VALUE|BASE|B64|BASE64))?[ \t]*=[ \t]*([^\s\"']{4,300}))"
         # 4: YAML/INI unquoted: password: hunter2, api_key = abc
         r"|(?im:^[ \t]*-?[ \t]*[A-Za-z0-9_.\-]*?" + _KW + r"(?:[_\-]?(?:key|value))?[ \t]*[:=][ \t]+([^\s\"']{6,300})[ \t]*\r?$)"
         # 5, 6: command-line flags: --password=..., --token ..., curl -u user:pass
         r"|(?i:--(?:password|passwd|token|api-key|apikey|secret|client-secret|auth-token)[= ]([^\s\"'$][^\s\"']{5,}))"
         r"|\bcurl\b[^\n]*?\s-u\s+[\"']?[^\s:\"']+:([^\s\"'@$]{4,})",
         None, anchor=r'(?i:pass|pwd|secret|token|api_?key|apikey|access_?key|auth|credential|curl)|PAT'),
    Rule("password_assignment", "unquoted password=/passwd=/pwd=/pass= anywhere in a line (shell, URLs, kwargs, "
         "connection strings), PGPASSWORD=..., MYSQL_PWD=...",
         r"(?:\b(?i:[a-z0-9_.\-]*[_.\-])?(?i:password|passwd|passphrase|pwd|pass)|\b[A-Z0-9_]*(?:PASSWORD|PASSWD|PWD))"
         r"[ \t]*=[ \t]*([^\s\"'`&;,()<>|\[\]{}=\\][^\s\"'`&;,()<>|\[\]{}\\]{3,299})",
         _check_inline_value, anchor=r'(?i)pass|pwd'),
    Rule("url_query_secret", "credential in a URL query parameter (?access_token=, &token=, ?api_key=, ?password=, ...)",
         r"[?&](?i:access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|token|api[_-]?key|apikey|key|"
         r"password|passwd|pwd|pass|secret|client[_-]?secret|private[_-]?token|session[_-]?token)"
         r"=([^&#\s\"'<>`\\]{4,300})",
         _check_query_value, anchor=r'(?i)[?&][a-z_\-]*(?:token|key|pass|pwd|secret)='),
    Rule("cli_password", "password on a command line: mysql/mariadb -pSECRET, sshpass -p SECRET",
         r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlpump|mariadb|mariadb-dump|mariadb-admin)"
         r"\b[^\n|;&]{0,300}?\s-p(?:\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|([^\s\"'][^\s\"';|&)]{0,199}))"
         r"|\bsshpass\b[^\n|;&]{0,100}?\s-p[ \t]*(?:\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|([^\s\"'\-][^\s\"';|&)]{0,199}))",
         _check_cli_value, anchor=r'mysql|mariadb|sshpass'),
)

# Per-group validators for the multi-form assignment rule (group index -> check).
_ASSIGN_CHECKS = {1: _check_quoted_value, 2: _check_quoted_value, 3: _check_env_value, 4: _check_unquoted_value,
                  5: _check_flag_value, 6: _check_env_value}

_OPTS = re2.Options()
_OPTS.max_mem = 64 << 20
_COMPILED = [re2.compile(r.pattern.encode(), _OPTS) for r in RULES]
_SET = re2.Set.SearchSet(_OPTS)
for _r in RULES:
    _SET.Add((_r.anchor or _r.pattern).encode())
_SET.Compile()
RULE_INDEX = {r.name: i for i, r in enumerate(RULES)}

# --- find / scrub --------------------------------------------------------------------


def _rule_spans(b: bytes) -> list[tuple[int, int, int]]:
    """(start, end, rule index) of every validated keyword-rule match, byte offsets."""
    hits = _SET.Match(b)
    if not hits:
        return []
    spans = []
    for i in sorted(hits):
        rule = RULES[i]
        rx = _COMPILED[i]
        for m in rx.finditer(b):
            g = None
            for gi in range(1, rx.groups + 1):
                if m.start(gi) >= 0 and m.end(gi) > m.start(gi):
                    g = gi
                    break
            if g is None:
                s, e = m.span()
            else:
                s, e = m.span(g)
            value = b[s:e]
            if b"[REDACTED:" in value:  # already scrubbed: scrub() is idempotent
                continue
            check = _ASSIGN_CHECKS.get(g) if rule.name == "secret_assignment" else rule.check
            if check is not None and not check(b"", value):
                continue
            spans.append((s, e, i))
    return spans


def _merge(spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Overlapping spans become one, named by the earliest rule in RULES (most specific)."""
    spans.sort(key=lambda t: (t[0], -t[1]))
    out: list[list[int]] = []
    for s, e, i in spans:
        if out and s < out[-1][1]:
            last = out[-1]
            last[1] = max(last[1], e)
            last[2] = min(last[2], i)
        else:
            out.append([s, e, i])
    return [tuple(x) for x in out]  # type: ignore[misc]


def _find_bytes(b: bytes) -> list[tuple[int, int, str]]:
    spans = _rule_spans(b)
    ent = entropy_spans(b)
    all_spans = spans + [(s, e, len(RULES)) for s, e in ent]
    names = [r.name for r in RULES] + [HIGH_ENTROPY]
    return [(s, e, names[i]) for s, e, i in _merge(all_spans)]


def find(text: str) -> list[Finding]:
    """Every secret in ``text`` as (rule, start, end), character offsets, sorted, non-overlapping."""
    if not text:
        return []
    b = text.encode("utf-8", "surrogatepass")
    found = _find_bytes(b)
    if not found:
        return []
    if len(b) == len(text):  # ASCII: byte offsets are character offsets
        return [Finding(rule, s, e) for s, e, rule in found]
    out = []
    pos_b = pos_c = 0  # byte and character offsets, advanced together (findings are sorted)
    for s, e, rule in found:
        pos_c += len(b[pos_b:s].decode("utf-8", "surrogatepass"))
        pos_b = s
        out.append(Finding(rule, pos_c, pos_c + len(b[s:e].decode("utf-8", "surrogatepass"))))
    return out


def scrub(text: str) -> tuple[str, list[Finding]]:
    """``text`` with every secret replaced by ``[REDACTED:<rule>]``, and the findings (spans in the input)."""
    findings = find(text)
    if not findings:
        return text, findings
    parts = []
    pos = 0
    for f in findings:
        parts.append(text[pos:f.start])
        parts.append(redaction(f.rule))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts), findings
