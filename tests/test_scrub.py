"""Secret scrubbing: planted secrets never survive, clean code is left alone, and it is fast.

The figures quoted in docs/privacy.md come from this file:

    pytest tests/test_scrub.py -s -k "planted or false_positive or throughput or recall"
"""

from __future__ import annotations

import random
import time
from collections import Counter

import orjson
import pytest

from replay.privacy.scrub import RULES, Finding, find, looks_random, scrub

from conftest import shared_logs
from secret_corpus import B62, B64, B64URL, clean_corpus, planted_corpus

# Bounds on the clean corpus (measured: 0 findings in 3 MB; the bounds leave room for the
# corpus to grow more adversarial without the test becoming a coin flip).
MAX_FINDINGS_PER_MB = 1.0
MAX_LINES_ALTERED = 0.0002  # fraction of clean lines changed by scrub


@pytest.fixture(scope="module")
def planted():
    return planted_corpus()


@pytest.fixture(scope="module")
def clean():
    return clean_corpus()


def test_planted_corpus_is_big_and_varied(planted):
    secrets = [s for d in planted for s in d.secrets]
    kinds = Counter(s.kind for s in secrets)
    contexts = Counter(d.context for d in planted)
    print(f"\nplanted: {len(secrets)} secrets of {len(kinds)} kinds in {len(planted)} documents "
          f"({len(contexts)} contexts)")
    assert len(secrets) >= 500
    assert len(kinds) >= 15
    assert len(contexts) >= 10
    # same seed, same corpus
    again = planted_corpus()
    assert [d.text for d in again] == [d.text for d in planted]


def test_no_planted_secret_survives(planted):
    leaks = []
    by_kind = Counter()
    for d in planted:
        out, findings = scrub(d.text)
        assert findings, d.context
        for s in d.secrets:
            by_kind[s.kind] += 1
            for part in s.must_vanish():
                if part in out:
                    leaks.append((d.context, s.kind, part[:12] + "..."))
    n = sum(by_kind.values())
    print(f"\nplanted secrets: {n} of {len(by_kind)} kinds, leaked after scrub: {len(leaks)}")
    assert leaks == []


def _fp_stats(texts: list[str]) -> tuple[float, int, float, float]:
    mb = sum(len(t.encode()) for t in texts) / 1e6
    findings = 0
    lines = altered = 0
    for t in texts:
        out, fs = scrub(t)
        findings += len(fs)
        a, b = t.split("\n"), out.split("\n")
        lines += len(a)
        if fs:
            altered += sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))
    return mb, findings, findings / mb, altered / lines


def test_false_positive_rate_on_clean_corpus(clean):
    mb, findings, per_mb, frac_lines = _fp_stats(clean)
    print(f"\nclean corpus: {mb:.2f} MB, {findings} findings = {per_mb:.3f} per MB, "
          f"{frac_lines:.5%} of lines altered")
    assert per_mb <= MAX_FINDINGS_PER_MB
    assert frac_lines <= MAX_LINES_ALTERED


def test_throughput(clean, planted):
    texts = clean + [d.text for d in planted]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        for t in texts:
            find(t)
        best = min(best, time.perf_counter() - t0)
    big = "\n".join(clean)
    t0 = time.perf_counter()
    find(big)
    one = time.perf_counter() - t0
    print(f"\nscrub throughput: {mb / best:.1f} MB/s over {len(texts)} texts ({mb:.1f} MB), "
          f"{len(big) / 1e6 / one:.1f} MB/s as one text")
    assert mb / best > 2.0  # a regression guard, not a benchmark


def test_high_entropy_recall_on_random_tokens():
    rng = random.Random(5)
    rows = []
    for name, alphabet in (("base62", B62), ("base64", B64), ("base64url", B64URL)):
        for n in (24, 32, 40, 64):
            hits = sum(looks_random("".join(rng.choice(alphabet) for _ in range(n)).encode()) for _ in range(1000))
            rows.append((name, n, hits / 1000))
    print("\nhigh_entropy recall on random tokens: " + ", ".join(f"{a}/{n}: {r:.1%}" for a, n, r in rows))
    assert all(r >= 0.9 for a, n, r in rows if n >= 32)
    assert all(r >= 0.95 for a, n, r in rows if n >= 64)


# --- rules, one by one --------------------------------------------------------------------

POSITIVE = [
    ("aws_access_key_id", "aws_access_key_id = AKIAQ3EGRWZ5XK7LQ2MP"),
    ("aws_secret_access_key", 'AWS_SECRET_ACCESS_KEY: "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"'),
    ("gcp_api_key", "key=AIzaSyD4n9Xq2Lm7Pw3Rt8Vy1Zb6Cd0Ef5Gh2Jk"),
    ("gcp_service_account", '"private_key_id": "0123456789abcdef0123456789abcdef01234567"'),
    ("google_oauth", "token ya29.a0AfH6SMBx3kLm9Qp2Rs7Tu1Vw4Xy8Za5Bc0De6Fg"),
    ("azure_key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNA==;"),
    ("azure_sas_signature", "https://a.blob.core.windows.net/c?sv=2022&sig=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy%3D"),
    ("github_token", "GITHUB_TOKEN=ghp_Abc123Def456Ghi789Jkl012Mno345Pqr678"),
    ("github_token", "github_pat_11ABCDEFG0123456789abc_defGHIJKLmnopQRSTuvwxYZ0123456789abcdefghijklmnopqrstuv"),
    ("gitlab_token", "glpat-Ab3dE5gH7jK9mN1pQ3sT"),
    ("slack_token", "xoxb-123456789012-1234567890123-Abc123Def456Ghi789Jkl012"),
    ("slack_webhook", "https://hooks.slack.com/services/T0ABCDEFG/B0123456789/Abc123Def456Ghi789Jkl012"),
    ("stripe_key", "Stripe('sk_live_51Hx9Abc123Def456Ghi789Jkl')"),
    ("anthropic_key", "ANTHROPIC_API_KEY=sk-ant-api03-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901Vwx234"),
    ("openai_key", "OPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678T3BlbkFJ"),
    ("npm_token", "//registry.npmjs.org/:_authToken=npm_Abc123Def456Ghi789Jkl012Mno345Pqr678"),
    ("pypi_token", "password = pypi-AgEIcHlwaS5vcmcCJGFiYzEyMy1kZWY0NTYtZ2hpNzg5LWprbDAxMi1tbm8zNDU2Nzg5MA"),
    ("huggingface_token", "HF_TOKEN=hf_Abc123Def456Ghi789Jkl012Mno345Pqr6"),
    ("sendgrid_key", "SG.Abc123Def456Ghi789Jkl0.Mno345Pqr678Stu901Vwx234Yz567Abc890Def123Ghi"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"),
    ("private_key", '{"key": "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAx9\\n-----END RSA PRIVATE KEY-----\\n"}'),
    ("db_connection_password", "DATABASE_URL=postgres://app:Xk9mP2vL4q@db.internal:5432/app"),
    ("db_connection_password", "mongodb+srv://admin:Tr0ub4dor3x@cluster0.abcde.mongodb.net/db"),
    ("url_password", "git clone https://deploy:Zq8Wn4Lp2Rt6@git.example.org/team/repo.git"),
    ("bearer_token", "curl -H 'Authorization: Bearer Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz'"),
    ("bearer_token", "X-Api-Key: Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz"),
    ("azure_client_secret", 'AZURE_CLIENT_SECRET: "Ab12Q~xYz0123456789abcdefghijklmnopqrs"'),
    ("secret_assignment", 'db_password = "Xk9#mP2$vL"'),
    ("secret_assignment", "DB_PASSWORD=hunter2hunter2"),
    ("secret_assignment", "  client_secret: q8Z!r3Lm0Wx9"),
    ("secret_assignment", "mysql -u root --password=S3cr3tPw0rd db"),
    ("high_entropy", "token for the staging box: Zr4Lq9Wm2Xt7Bn5Kc1Vd8Hs3Gf6Jp0Ay"),
    ("password_assignment", "./deploy.sh host=db1 password=Hunter2xyz --fast"),
    ("url_query_secret", "GET https://api.example.org/v2/items?limit=5&access_token=q8Zr3Lm0Wx9Tn1"),
    ("cli_password", "mysql -h db -u root -pS3cretPw0rd shop < dump.sql"),
]

# Misses found by the hostile-input review (issue 18): each planted value must vanish.
MISSES = [
    ("password=", "connect with user=bob password=Hunter2xyz now", "Hunter2xyz"),
    ("password= in a URL", "curl 'http://10.0.0.5/login?user=bob&password=Tr0ub4dor'", "Tr0ub4dor"),
    ("pwd=", "Server=db;Uid=sa;Pwd=Zx81!qwe;Database=shop", "Zx81!qwe"),
    ("pass=", "login pass=s3cretPa55 host=a", "s3cretPa55"),
    ("PGPASSWORD= mid-line", "cd /srv && PGPASSWORD=pg9Secret psql -h db", "pg9Secret"),
    ("mysql -p", "mysql -uroot -pS3cretPw0rd -e 'show databases'", "S3cretPw0rd"),
    ("mysql -p quoted", 'mysqldump -u app -p"Qw3rty!9" shop > s.sql', "Qw3rty!9"),
    ("mysql --password=", "mysql --password=S3cretPw0rd shop", "S3cretPw0rd"),
    ("sshpass -p", "sshpass -p 'Plain0ldPass' ssh -p 2222 root@10.0.0.40", "Plain0ldPass"),
    ("sshpass -p unquoted", "sshpass -p hunter2hunter2 scp a b:", "hunter2hunter2"),
    ("?access_token=", "https://graph.example.com/me?access_token=EAAb12cdEF34", "EAAb12cdEF34"),
    ("&token=", "wss://push.example.com/ws?v=2&token=a1b2c3d4e5f6g7", "a1b2c3d4e5f6g7"),
    ("AWS key id after _", "mcp__x__AKIAQ3EGRWZ5XK7LQ2MP", "AKIAQ3EGRWZ5XK7LQ2MP"),
    ("AWS key id between _", "bucket_AKIAQ3EGRWZ5XK7LQ2MP_prod", "AKIAQ3EGRWZ5XK7LQ2MP"),
    ("GitHub token after _", "mcp__gh__ghp_Abc123Def456Ghi789Jkl012Mno345Pqr678", "ghp_Abc123Def456Ghi789Jkl012Mno345Pqr678"),
]

# ... and what the new rules must leave alone.
MISS_NEGATIVE = [
    "echo $PWD && cd $(pwd)",
    "password=PasswordInput()",
    "password = form.cleaned_data['password']",
    "password=self.password, pwd=os.getcwd()",
    "if password == hashed:",
    "mysql -u root -p shop",  # -p then a space: mysql prompts; 'shop' is the database
    "mysql -u root -p$MYSQL_PASSWORD shop",
    "sshpass -e ssh host",
    "https://example.org/search?q=token&page=2&key=value",
    "https://example.org/cb?token=${TOKEN}",
    "PASSWORD_MIN_LENGTH=12",
    "bypass=true compass=north",
]

NEGATIVE = [
    "commit 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    "id: 3fa85f64-5717-4562-b3fc-2c963f66afa6 / 3FA85F64-5717-4562-B3FC-2C963F66AFA6",
    '"integrity": "sha512-Q0Lk8cY3gMZ5yq7w2Xrm1Xg7Zp5c9L6vBq3Jx8nD4fHk2wA1sT0uV9yR6eW5tO3iP2aS1dF4gH7jK0lZ9xC8vB=="',
    "github.com/pkg/errors v0.9.1 h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4=",
    "docker.io/library/python@sha256:" + "ab12" * 16,
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
    '{"id": "msg_01LxZB5koNcDj7PtzYgmsVpE", "tool_use_id": "toolu_01UVAhQU19c4LFxRHN5MMARK", "request": "req_011CRrqFg4D2FXAgNCugTdet"}',
    "getUserAccountSettingsForOrganization2Id = useCallback(() => fetchOrganizationMembershipDetails(orgId), [])",
    "password: string;",
    "def login(username: str, password: str, token: str | None = None):",
    'token_type = "bearer"; max_tokens = 4096; "tokenizer": "o200k_base"',
    'API_KEY = os.environ["API_KEY"]',
    "DB_PASSWORD=${DB_PASSWORD}",
    "Authorization: Bearer ${TOKEN}",
    "postgres://user:password@localhost:5432/app",
    "postgres://app:${DB_PASSWORD}@db:5432/app",
    "secret_name: app-secrets",
    "privateKey: Uint8Array,",
    "hasToken: !!state.token,",
    "const refreshToken = body?.refreshToken;",
    "src/components/FileBrowser/UserSettingsPanel.tsx",
    "run-2026-06-23T19-42-56-421Z-109d16/summary.json",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGxUYWZ0ZXN0a2V5Zm9ydGVzdGluZ29ubHkxMjM0 alice@laptop",
]


@pytest.mark.parametrize("rule,text", POSITIVE, ids=[f"{r}-{i}" for i, (r, _) in enumerate(POSITIVE)])
def test_rule_finds_its_secret(rule, text):
    found = find(text)
    assert [f.rule for f in found] == [rule], found
    out, _ = scrub(text)
    assert f"[REDACTED:{rule}]" in out


@pytest.mark.parametrize("text", NEGATIVE)
def test_clean_text_is_left_alone(text):
    assert find(text) == []
    assert scrub(text) == (text, [])


@pytest.mark.parametrize("what,text,secret", MISSES, ids=[m[0] for m in MISSES])
def test_issue_18_misses_are_scrubbed(what, text, secret):
    out, found = scrub(text)
    assert found, what
    assert secret not in out, (what, out)


@pytest.mark.parametrize("text", MISS_NEGATIVE)
def test_issue_18_rules_leave_code_alone(text):
    assert find(text) == [], text


def test_every_rule_is_exercised():
    covered = {r for r, _ in POSITIVE}
    assert {r.name for r in RULES} <= covered
    assert "high_entropy" in covered


def test_offsets_are_character_offsets():
    token = "ghp_Abc123Def456Ghi789Jkl012Mno345Pqr678"
    text = "héllo wörld 🎉 token=" + token + " ✓"
    [f] = find(text)
    assert text[f.start:f.end] == token
    assert scrub(text)[0] == "héllo wörld 🎉 token=[REDACTED:github_token] ✓"


def test_overlapping_matches_merge_into_one():
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    text = f"Authorization: Bearer {jwt}"
    found = find(text)
    assert len(found) == 1 and text[found[0].start:found[0].end] == jwt
    assert found[0].rule == "jwt"  # the more specific rule names the merged span


def test_scrub_is_idempotent_and_handles_empty(planted):
    assert scrub("") == ("", [])
    for d in planted[:40]:
        once, _ = scrub(d.text)
        twice, again = scrub(once)
        assert again == [] and twice == once


def test_finding_is_a_plain_record():
    f = Finding("jwt", 1, 5)
    assert (f.rule, f.start, f.end) == ("jwt", 1, 5)


def test_findings_on_the_shared_corpus():
    """Informational: findings per MB on real agent logs (real code, some real tokens)."""
    logs = shared_logs("claude-code")
    texts: list[str] = []

    def walk(o):
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, str) and o:
            texts.append(o)

    for f in sorted(logs.iterdir()):
        data = f.read_bytes()
        recs = orjson.loads(data) if data.lstrip()[:1] == b"[" else [orjson.loads(x) for x in data.splitlines() if x.strip()]
        walk(recs)
    texts = list(dict.fromkeys(texts))
    mb = sum(len(t.encode()) for t in texts) / 1e6
    t0 = time.perf_counter()
    rules = Counter(f.rule for t in texts for f in find(t))
    dt = time.perf_counter() - t0
    total = sum(rules.values())
    print(f"\nshared corpus: {mb:.1f} MB of distinct strings, {total} findings ({total / mb:.1f} per MB), "
          f"{mb / dt:.1f} MB/s; by rule: {dict(rules.most_common())}")
    assert total / mb < 20
