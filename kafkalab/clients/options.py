"""The course apps' option names, defaults and validation, and their translation to librdkafka.

Settings arrive as ``dict[str, str]`` (a lab's settings, or ``-Dname=value`` on the command line) and
are checked all at once: every bad name or value is named in one error line.

Each option that stands for a Kafka client setting carries Kafka's own name for it (``producer.idempotent`` is
``enable.idempotence``): what attendees know from the course and Kafka's docs is accepted wherever a setting is
typed, bare (``enable.idempotence``) or with the client's prefix (``producer.enable.idempotence``), and kept
under kafkalab's name, which allow-lists and rules match.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

from kafkalab.errors import KafkalabError
from kafkalab.settings_text import name_values


class OptionsError(KafkalabError):
    """Client settings refused; ``names``: the settings the message is about, in the order it names them (a lab
    file's error points at the first of them its author wrote)."""

    def __init__(self, message: str, names: Iterable[str]) -> None:
        super().__init__(message)
        self.names = tuple(names)


class OptionsConflict(OptionsError):
    """Settings each valid alone that do not go together (``producer.idempotent=true`` with ``producer.acks=1``):
    given on one line together, or one of them taken back, they pass; a bad name or value never does."""

DEFAULT_BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9192,127.0.0.1:9292"
BOOTSTRAP = "bootstrap.server"

_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n"}
INT32_MAX = 2**31 - 1  # Kafka's int settings are Java ints; librdkafka's too, and it wraps a larger one silently
_WHOLE = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: int() would also take "1_000" and other scripts' digits
_SHOWN = 24  # a value longer than this is shortened in an error line


@dataclass(frozen=True)
class Option:
    """One course option: its name, default (None: unset) and the values it takes."""

    name: str
    default: str | None
    kind: str  # "int", "bool", "str" or "choice"
    help: str
    minimum: int = 0  # an int's range: the narrower of Kafka's and librdkafka's, which the clients run on
    maximum: int = INT32_MAX
    choices: tuple[str, ...] = ()
    kafka: str = ""  # Kafka's own name for the setting, accepted as an alias; "" for kafkalab's own options
    kafka_both: bool = False  # both Kafka clients have a setting of that name: bare, it does not say which

    def parse(self, raw: str) -> Any:
        """The typed value, or ValueError with the reason."""
        text = raw.strip()
        if self.kind == "int":
            if not _WHOLE.fullmatch(text):
                raise ValueError("is not a whole number")
            value = int(text)
            if not self.minimum <= value <= self.maximum:
                raise ValueError(f"is out of range: give {self.minimum}..{self.maximum}")
            return value
        if self.kind == "bool":
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError("is not true or false")
        if self.kind == "choice":
            if text not in self.choices:
                raise ValueError(f"is not one of {', '.join(self.choices)}")
            return text
        if not text:
            raise ValueError("is empty")
        return text


def _int(name: str, default: int | None, help: str, minimum: int = 0, maximum: int = INT32_MAX, kafka: str = "",
         kafka_both: bool = False) -> Option:
    return Option(name, None if default is None else str(default), "int", help, minimum=minimum, maximum=maximum,
                  kafka=kafka, kafka_both=kafka_both)


GROUP_PROTOCOLS = ("classic", "consumer")
COMMON_OPTIONS = (Option(BOOTSTRAP, DEFAULT_BOOTSTRAP, "str", "host:port list of the brokers",
                         kafka="bootstrap.servers"),)

# maximums below INT32_MAX are librdkafka's own ranges (it refuses more when the client is made, mid-run)
PRODUCER_OPTIONS = (
    Option("producer.topic", "test-topic", "str", "topic to send to"),
    Option("producer.acks", "all", "choice", "0, 1 or all (-1)", choices=("0", "1", "all", "-1"), kafka="acks"),
    _int("producer.num-rolls", 1, "how many rolls of records", minimum=1),
    _int("producer.num-records-per-roll", 100, "records per roll (keys 0..n-1)", minimum=1),
    _int("producer.wait-after-roll", 5000, "ms to sleep between rolls"),
    _int("producer.wait-after-send", 0, "ms to sleep after each send"),
    _int("producer.tombstones", 0, "keys 0..n-1 deleted after the first roll: a tombstone (null value) each at the "
         "start of the second, never written again (needs num-rolls >= 2)"),
    _int("producer.local-id", -1, "names the payload log (producer-N.csv)", minimum=-1),
    Option("producer.payload-trunc", "false", "bool", "truncate the payload log instead of appending"),
    _int("producer.max-inflight", 5, "requests sent and not yet answered, per broker connection", minimum=1,
         maximum=1_000_000, kafka="max.in.flight.requests.per.connection"),
    Option("producer.idempotent", None, "bool", "default: on unless acks != all or max-inflight > 5",
           kafka="enable.idempotence"),
    _int("producer.batch", 16384, "bytes of records per batch", minimum=1, kafka="batch.size"),
    _int("producer.linger", 0, "ms a batch waits for more records", maximum=900_000, kafka="linger.ms"),
    _int("producer.retries", 2147483647, "resends of a batch that failed", kafka="retries"),
    _int("producer.delivery-timeout", 120000, "ms a record may take to be acknowledged, retries included",
         minimum=1, kafka="delivery.timeout.ms"),
    _int("producer.request-timeout", 30000, "ms to wait for a broker's answer", minimum=1, maximum=900_000,
         kafka="request.timeout.ms", kafka_both=True),
    _int("producer.retry-backoff", 100, "ms before a retry", minimum=1, maximum=300_000, kafka="retry.backoff.ms",
         kafka_both=True),
    _int("producer.retry-max", 1000, "the longest ms between retries", minimum=1, maximum=300_000,
         kafka="retry.backoff.max.ms", kafka_both=True),
    _int("producer.metadata-max-age", 300000, "ms between metadata refreshes: how late it sees partitions added",
         maximum=3_600_000, kafka="metadata.max.age.ms", kafka_both=True),
    _int("producer.max-block", 60000, "ms a send() may block (its buffer full) before it fails the record",
         kafka="max.block.ms"),
    _int("producer.buffer-memory", 33554432, "bytes of records the producer holds unsent; once full, send() blocks",
         minimum=1024, kafka="buffer.memory"),  # librdkafka counts its buffer in kbytes
    Option("producer.transaction-id", None, "str", "transactional: records sent in transactions, acked once "
           "committed (needs idempotence); unset: not transactional", kafka="transactional.id"),
    _int("producer.transaction-timeout", 60000, "ms a transaction may stay open before its coordinator aborts it "
         "(with a transaction-id)", minimum=1000, kafka="transaction.timeout.ms"),  # librdkafka's minimum
    _int("producer.records-per-transaction", 100, "records each transaction holds (with a transaction-id)",
         minimum=1),
)

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")

CONSUMER_OPTIONS = (
    Option("consumer.topic", "test-topic", "str", "topic to subscribe to"),
    Option("consumer.group-id", "test-app", "str", "the consumer group", kafka="group.id"),
    Option("consumer.instance-id", None, "str", "static membership: a restart keeps the member's partitions",
           kafka="group.instance.id"),
    Option("consumer.auto-commit", "true", "bool", "commit in the background (offsets stored after processing)",
           kafka="enable.auto.commit"),
    _int("consumer.ac-interval", 5000, "ms between background commits", maximum=86_400_000,
         kafka="auto.commit.interval.ms"),
    _int("consumer.fetch-min-bytes", 1, "bytes a fetch waits for", minimum=1, kafka="fetch.min.bytes"),
    _int("consumer.max-poll-recs", 500, "max records per poll", minimum=1, maximum=1_000_000,  # confluent-kafka's
         kafka="max.poll.records"),
    Option("consumer.group-protocol", "classic", "choice",
           "classic, or consumer (KIP-848: the broker assigns; Kafka 4.0+)", choices=GROUP_PROTOCOLS,
           kafka="group.protocol"),
    Option("consumer.assignment-strategy", "coop", "choice", "coop, range or rr", choices=("coop", "range", "rr"),
           kafka="partition.assignment.strategy"),
    _int("consumer.heartbeat-interval", 3000, "ms between heartbeats", minimum=1, maximum=3_600_000,
         kafka="heartbeat.interval.ms"),
    _int("consumer.session-timeout", 45000, "ms without a heartbeat before the group drops the member", minimum=1,
         maximum=3_600_000, kafka="session.timeout.ms"),
    Option("consumer.auto-offset-reset", "latest", "choice", "earliest, latest or none",
           choices=("earliest", "latest", "none"), kafka="auto.offset.reset"),
    Option("consumer.isolation-level", "read_uncommitted", "choice",
           "read_uncommitted (every record), or read_committed (committed transactions' records only, up to the "
           "last stable offset)", choices=ISOLATION_LEVELS, kafka="isolation.level"),
    _int("consumer.poll-period", 1000, "poll timeout in ms"),
    _int("consumer.wait-after-recv", 0, "ms to sleep after receiving a batch"),
    _int("consumer.wait-after-batch", 0, "ms to sleep after processing a batch"),
    _int("consumer.wait-after-record", 0, "ms to sleep after each record"),
    _int("consumer.wait-cmd-period", 5000, "ms a `wait` control record sleeps"),
    _int("consumer.ack-every-x-msgs", None, "commit the polled position every x records (auto-commit off)",
         minimum=1),
    Option("consumer.ack-after-batch", "false", "bool", "commit after each batch (auto-commit off)"),
    _int("consumer.local-id", -1, "names the payload log (consumer-N.csv)", minimum=-1),
    Option("consumer.payload-trunc", "false", "bool", "truncate the payload log instead of appending"),
)

# The processor's options: the consumer's it shares under its own prefix, and its transactions. No Kafka aliases:
# a bare ``transactional.id`` or ``group.id`` stays the producer's or the consumer's.
PROCESSOR_OPTIONS = (
    Option("processor.input-topic", "test-topic", "str", "topic to read from"),
    Option("processor.output-topic", "test-topic-out", "str", "topic to write the transformed records to"),
    Option("processor.group-id", "test-processor", "str", "the processor's consumer group"),
    Option("processor.transaction-id", None, "str", "exactly once: each batch's output and its input offsets in one "
           "transaction; unset: at-least-once (output sent, then the input offsets committed)"),
    _int("processor.records-per-transaction", 100, "records each transaction holds (with a transaction-id)",
         minimum=1),
    _int("processor.transaction-timeout", 60000, "ms a transaction may stay open before its coordinator aborts it "
         "(with a transaction-id)", minimum=1000),
    Option("processor.isolation-level", "read_uncommitted", "choice", "read_uncommitted, or read_committed "
           "(the input's committed transactions only)", choices=ISOLATION_LEVELS),
    Option("processor.auto-offset-reset", "earliest", "choice", "earliest, latest or none",
           choices=("earliest", "latest", "none")),
    _int("processor.max-poll-recs", 500, "max records per poll (a batch)", minimum=1, maximum=1_000_000),
    _int("processor.poll-period", 1000, "poll timeout in ms"),
    _int("processor.wait-after-record", 0, "ms to sleep after each record"),
    _int("processor.session-timeout", 45000, "ms without a heartbeat before the group drops the processor",
         minimum=1, maximum=3_600_000),
    _int("processor.local-id", -1, "names the payload logs (consumer-processor-N.csv, producer-processor-N.csv)",
         minimum=-1),
    Option("processor.payload-trunc", "false", "bool", "truncate the payload logs instead of appending"),
)

# with group.protocol=consumer the broker owns these (group.consumer.*): librdkafka refuses them client-side
CLASSIC_ONLY = {"consumer.session-timeout": "group.consumer.session.timeout.ms",
                "consumer.heartbeat-interval": "group.consumer.heartbeat.interval.ms",
                "consumer.assignment-strategy": "group.consumer.assignors"}
_ROLES = {"producer": PRODUCER_OPTIONS, "consumer": CONSUMER_OPTIONS, "processor": PROCESSOR_OPTIONS}
_ASSIGNORS = {"coop": "cooperative-sticky", "range": "range", "rr": "roundrobin"}
# a transactional producer's own options: refused without producer.transaction-id
_TRANSACTIONS_ONLY = {"producer.transaction-timeout", "producer.records-per-transaction",
                      "processor.transaction-timeout", "processor.records-per-transaction"}


_LISTED = {"producer": "`kafkalab produce --options`", "consumer": "`kafkalab consume --options`",
           "processor": "docs/clients.md's Processor section"}  # where a role's options are listed


def parse_defines(items: Iterable[str]) -> dict[str, str]:
    """``["producer.acks=1", ...]`` (from -D) -> dict; a later one wins, as with -D on the JVM."""
    return name_values(items, "-D", "producer.acks=1")


def _by_kafka_name() -> dict[str, dict[str, Option]]:
    """Kafka's name -> the options that carry it, by client ("common" for both)."""
    owners: dict[str, dict[str, Option]] = {}
    for role, options in (("common", COMMON_OPTIONS), *_ROLES.items()):
        for option in options:
            if option.kafka:
                owners.setdefault(option.kafka, {})[role] = option
    return owners


_KAFKA_NAMES = _by_kafka_name()


def canonical_name(name: str, role: str | None = None) -> str:
    """kafkalab's name for a setting typed by Kafka's name: ``enable.idempotence`` and
    ``producer.enable.idempotence`` are ``producer.idempotent``; any other name comes back as it is (validation
    names it). ``role``: the client the setting is for when the context says (``kafkalab produce -D``); without it
    a bare name both Kafka clients have (``request.timeout.ms``) is refused: it does not say which."""
    prefix, dot, rest = name.partition(".")
    if dot and prefix in _ROLES:
        option = _KAFKA_NAMES.get(rest, {}).get(prefix)
        return option.name if option else name
    owners = _KAFKA_NAMES.get(name)
    if not owners:
        return name
    mine = owners.get("common") or (owners.get(role) if role else None)
    if mine is not None:
        return mine.name
    option, *others = owners.values()
    if others or (role is None and option.kafka_both):
        raise OptionsError(f"{name} is a setting of both Kafka clients: write producer.{name} or consumer.{name}",
                           (name,))
    return option.name  # the one client's that has it: for the other ``role``, validation refuses it by name


def canonical_settings(settings: Mapping[str, str], role: str) -> dict[str, str]:
    """``settings`` of ``role``'s client by kafkalab's names (of two names for one option, the later wins)."""
    return {canonical_name(name, role): value for name, value in settings.items()}


def _shown(raw: str) -> str:
    """A typed value as an error line quotes it: whole unless it is very long (a 300-digit number)."""
    return raw if len(raw) <= _SHOWN else f"{raw[:_SHOWN]}... ({len(raw)} characters)"


def _resolve(settings: Mapping[str, str], role: str) -> tuple[dict[str, Any], set[str]]:
    """Typed values for every option of ``role`` (defaults filled), and the names that were given (kafkalab's:
    a Kafka name given is its option's; of two names for one option, the later wins, as with -D)."""
    options = {o.name: o for o in (*COMMON_OPTIONS, *_ROLES[role])}
    known = [*options, *(f"{role}.{o.kafka}" for o in _ROLES[role] if o.kafka)]  # what "did you mean" offers
    others = [r for r in _ROLES if r != role]
    errors: list[str] = []
    refused: list[str] = []  # the settings the errors are about, as written, in order
    values: dict[str, Any] = {}
    for written, raw in settings.items():
        name = canonical_name(written, role)
        option = options.get(name)
        if option is None:
            refused.append(written)
            if other := next((r for r in others if name.startswith(r + ".")), None):
                kafkalabs = "" if name == written else f" ({name})"
                errors.append(f"{written}{kafkalabs} is a {other} option, not a {role} one")
            else:
                close = difflib.get_close_matches(written, known, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                errors.append(f"unknown option {written}{hint}")
            continue
        try:
            values[name] = option.parse(str(raw))
        except ValueError as exc:
            refused.append(written)
            errors.append(f"{written}={_shown(str(raw))} {exc}")
    if errors:
        raise OptionsError("; ".join(errors) + f" ({_LISTED[role]} lists them)", refused)
    given = set(values)
    for option in options.values():
        if option.name not in values and option.default is not None:
            values[option.name] = option.parse(option.default)
    return values, given


def role_options(role: str) -> tuple[Option, ...]:
    """Every option ``role``'s client takes, the common ones first: what ``--options`` lists."""
    return (*COMMON_OPTIONS, *_ROLES[role])


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """What the producer's and the consumer's validated settings share: where, which topic, which instance."""

    ROLE: ClassVar[str]  # the client's name without a local id
    TOPIC: ClassVar[str] = "topic"  # the option (after the role's prefix) naming the topic it reads or writes
    bootstrap: str
    topic: str
    local_id: int
    payload_trunc: bool
    notes: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Self:
        """Course option names to a validated config: the role's options parsed, its rules applied (a broken
        one is a KafkalabError naming it), ``notes`` on what a rule turned off."""
        v, given = _resolve(settings, cls.ROLE)
        notes: list[str] = []
        own = cls._own_fields(v, given, notes)
        return cls(bootstrap=v[BOOTSTRAP], topic=v[f"{cls.ROLE}.{cls.TOPIC}"], local_id=v[f"{cls.ROLE}.local-id"],
                   payload_trunc=v[f"{cls.ROLE}.payload-trunc"], notes=tuple(notes), **own)

    @classmethod
    def from_spec(cls, fields: Mapping[str, Any]) -> Self:
        """A config back from its fields as JSON carried them (``dataclasses.asdict`` on the other side)."""
        return cls(**{**fields, "notes": tuple(fields["notes"])})

    @classmethod
    def _own_fields(cls, v: dict[str, Any], given: set[str], notes: list[str]) -> dict[str, Any]:
        """The subclass's own fields from the parsed options ``v`` (``given``: those set, not defaulted)."""
        raise NotImplementedError

    @classmethod
    def of(cls, settings: Mapping[str, str] | Self, bootstrap: str | None = None) -> Self:
        """``settings`` validated unless they are; ``bootstrap``, if given, overrides ``bootstrap.server``."""
        config = cls.from_settings(settings) if isinstance(settings, Mapping) else settings
        return replace(config, bootstrap=bootstrap) if bootstrap else config

    @property
    def name(self) -> str:
        return self.ROLE if self.local_id < 0 else f"{self.ROLE}-{self.local_id}"


def _check_tombstones(v: Mapping[str, Any]) -> None:
    """producer.tombstones deletes keys of the first roll, in a second one."""
    tombstones, keys, rolls = v["producer.tombstones"], v["producer.num-records-per-roll"], v["producer.num-rolls"]
    if tombstones and rolls < 2:
        raise OptionsConflict(f"producer.tombstones={tombstones} deletes keys after the first roll: give "
                              "producer.num-rolls=2 or more, or drop producer.tombstones",
                              ("producer.tombstones", "producer.num-rolls"))
    if tombstones > keys:
        raise OptionsConflict(f"producer.tombstones={tombstones} is more than the {keys} keys of a roll "
                              "(producer.num-records-per-roll)",
                              ("producer.tombstones", "producer.num-records-per-roll"))


@dataclass(frozen=True, kw_only=True)
class ProducerConfig(ClientConfig):
    """Validated producer settings, with the course's idempotence rule applied."""

    ROLE = "producer"
    acks: str
    num_rolls: int
    records_per_roll: int
    wait_after_roll_ms: int
    wait_after_send_ms: int
    max_inflight: int
    idempotent: bool
    batch_bytes: int
    linger_ms: int
    retries: int
    delivery_timeout_ms: int
    request_timeout_ms: int
    retry_backoff_ms: int
    retry_max_ms: int
    metadata_max_age_ms: int = 300000
    max_block_ms: int = 60000
    buffer_memory: int = 33554432  # bytes
    transaction_id: str | None = None  # transactional when set
    transaction_timeout_ms: int = 60000
    records_per_transaction: int = 100
    tombstones: int = 0  # keys 0..n-1 deleted at the start of the second roll

    @classmethod
    def _own_fields(cls, v: dict[str, Any], given: set[str], notes: list[str]) -> dict[str, Any]:
        acks = "all" if v["producer.acks"] == "-1" else v["producer.acks"]
        transaction_id = v.get("producer.transaction-id")
        if transaction_id is None and (alone := sorted(given & _TRANSACTIONS_ONLY)):
            raise OptionsConflict(f"{alone[0]} is for a transactional producer: give producer.transaction-id too, "
                                  f"or drop {alone[0]}", (alone[0], "producer.transaction-id"))
        if transaction_id is not None:
            against = {"producer.idempotent": "false" if v.get("producer.idempotent") is False else "",
                       "producer.acks": "" if acks == "all" else acks,
                       "producer.max-inflight": str(v["producer.max-inflight"]) if v["producer.max-inflight"] > 5
                       else ""}
            if conflicting := [name for name, value in against.items() if value]:
                shown = ", ".join(f"{name}={against[name]}" for name in conflicting)
                raise OptionsConflict(
                    f"producer.transaction-id needs idempotence (producer.acks=all, producer.max-inflight <= 5), "
                    f"not {shown}: change it or drop producer.transaction-id",
                    ("producer.transaction-id", *conflicting))
        if "producer.idempotent" in given:
            idempotent = v["producer.idempotent"]
            if idempotent and (acks != "all" or v["producer.max-inflight"] > 5):
                raise OptionsConflict(
                    "producer.idempotent=true needs producer.acks=all and producer.max-inflight <= 5: "
                    "change one of them or drop producer.idempotent",
                    ("producer.idempotent", "producer.acks", "producer.max-inflight"))
        else:
            idempotent = True
            if acks != "all":
                idempotent = False
                notes.append("idempotence off as acks != all")
            if v["producer.max-inflight"] > 5:
                idempotent = False
                notes.append("idempotence off as max-inflight > 5")
        if v["producer.retry-max"] < v["producer.retry-backoff"]:
            raise OptionsConflict("producer.retry-max must be >= producer.retry-backoff",
                               ("producer.retry-max", "producer.retry-backoff"))
        if v["producer.delivery-timeout"] < v["producer.linger"] + v["producer.request-timeout"]:
            raise OptionsConflict(
                "producer.delivery-timeout must be >= producer.linger + producer.request-timeout "
                "(as the Java client requires)",
                ("producer.delivery-timeout", "producer.linger", "producer.request-timeout"))
        _check_tombstones(v)
        if (transaction_id is not None and "producer.delivery-timeout" in given
                and v["producer.delivery-timeout"] > v["producer.transaction-timeout"]):
            notes.append("records time out after producer.transaction-timeout: librdkafka caps "
                         "producer.delivery-timeout to it")
        return dict(
            acks=acks, num_rolls=v["producer.num-rolls"], records_per_roll=v["producer.num-records-per-roll"],
            wait_after_roll_ms=v["producer.wait-after-roll"], wait_after_send_ms=v["producer.wait-after-send"],
            max_inflight=v["producer.max-inflight"], idempotent=idempotent, batch_bytes=v["producer.batch"],
            linger_ms=v["producer.linger"], retries=v["producer.retries"],
            delivery_timeout_ms=v["producer.delivery-timeout"], request_timeout_ms=v["producer.request-timeout"],
            retry_backoff_ms=v["producer.retry-backoff"], retry_max_ms=v["producer.retry-max"],
            metadata_max_age_ms=v["producer.metadata-max-age"], max_block_ms=v["producer.max-block"],
            buffer_memory=v["producer.buffer-memory"], transaction_id=transaction_id,
            transaction_timeout_ms=v["producer.transaction-timeout"],
            records_per_transaction=v["producer.records-per-transaction"], tombstones=v["producer.tombstones"],
        )

    @property
    def transactional(self) -> bool:
        return self.transaction_id is not None

    @property
    def total(self) -> int:
        """Records it sends: every key in the first roll; then the tombstones, and the keys left in each roll."""
        return self.num_rolls * (self.records_per_roll - self.tombstones) + 2 * self.tombstones

    def librdkafka(self) -> dict[str, Any]:
        """Set explicitly wherever librdkafka's default differs from the Java client's."""
        return {
            "bootstrap.servers": self.bootstrap,
            "client.id": f"kafkalab-{self.name}",
            "acks": "all" if self.acks == "all" else self.acks,
            "enable.idempotence": self.idempotent,
            "max.in.flight.requests.per.connection": self.max_inflight,
            "batch.size": self.batch_bytes,
            "linger.ms": self.linger_ms,
            "retries": self.retries,
            "message.timeout.ms": self.delivery_timeout_ms,
            "request.timeout.ms": self.request_timeout_ms,
            "retry.backoff.ms": self.retry_backoff_ms,
            "retry.backoff.max.ms": self.retry_max_ms,
            "topic.metadata.refresh.interval.ms": self.metadata_max_age_ms,  # the Java client's metadata.max.age.ms
            "partitioner": "murmur2_random",  # the Java client's keyed partitioning
            "queue.buffering.max.kbytes": self.buffer_memory // 1024,  # the Java client's buffer.memory
            "queue.buffering.max.messages": INT32_MAX,  # the Java client's buffer counts bytes only
            # max.block.ms is no librdkafka setting: produce() refuses at once, producer_loop waits up to it
            "compression.type": "none",
            **self._transactions(),
        }

    def _transactions(self) -> dict[str, Any]:
        if self.transaction_id is None:
            return {}
        # librdkafka refuses a message.timeout.ms above transaction.timeout.ms (the Java client has no such rule:
        # a record that slow has its transaction aborted by the coordinator anyway)
        return {"transactional.id": self.transaction_id, "transaction.timeout.ms": self.transaction_timeout_ms,
                "message.timeout.ms": min(self.delivery_timeout_ms, self.transaction_timeout_ms)}


@dataclass(frozen=True, kw_only=True)
class ConsumerConfig(ClientConfig):
    """Validated consumer settings, with the course's commit-mode rules applied."""

    ROLE = "consumer"
    group_id: str
    instance_id: str | None
    auto_commit: bool
    auto_commit_interval_ms: int
    fetch_min_bytes: int
    max_poll_records: int
    assignment_strategy: str
    heartbeat_interval_ms: int
    session_timeout_ms: int
    auto_offset_reset: str
    poll_period_ms: int
    wait_after_recv_ms: int
    wait_after_batch_ms: int
    wait_after_record_ms: int
    wait_cmd_period_ms: int
    ack_every: int
    ack_after_batch: bool
    group_protocol: str = "classic"
    isolation_level: str = "read_uncommitted"  # the Java client's default

    @classmethod
    def _own_fields(cls, v: dict[str, Any], given: set[str], notes: list[str]) -> dict[str, Any]:
        if v["consumer.group-protocol"] == "consumer" and (classic := sorted(given & set(CLASSIC_ONLY))):
            raise OptionsConflict(
                f"{classic[0]} is a classic-protocol setting: with consumer.group-protocol=consumer the broker "
                f"sets it ({CLASSIC_ONLY[classic[0]]}), so drop it", (classic[0], "consumer.group-protocol"))
        auto_commit = v["consumer.auto-commit"]
        ack_every = v.get("consumer.ack-every-x-msgs") or 0
        ack_after_batch = v["consumer.ack-after-batch"]
        if ack_every and auto_commit:
            notes.append("ack-every-x-msgs is set, turning autocommit off")
            auto_commit = False
        if ack_after_batch:
            if auto_commit:
                notes.append("ack-after-batch is set, turning autocommit off")
                auto_commit = False
            if ack_every:
                notes.append("ack-every-x-msgs and ack-after-batch are exclusive; turning the former off")
                ack_every = 0
        classic_group = v["consumer.group-protocol"] == "classic"
        if classic_group and v["consumer.heartbeat-interval"] >= v["consumer.session-timeout"]:
            raise OptionsConflict("consumer.heartbeat-interval must be lower than consumer.session-timeout",
                               ("consumer.heartbeat-interval", "consumer.session-timeout"))
        return dict(
            group_id=v["consumer.group-id"], instance_id=v.get("consumer.instance-id"), auto_commit=auto_commit,
            auto_commit_interval_ms=v["consumer.ac-interval"], fetch_min_bytes=v["consumer.fetch-min-bytes"],
            max_poll_records=v["consumer.max-poll-recs"], assignment_strategy=v["consumer.assignment-strategy"],
            heartbeat_interval_ms=v["consumer.heartbeat-interval"], session_timeout_ms=v["consumer.session-timeout"],
            auto_offset_reset=v["consumer.auto-offset-reset"], poll_period_ms=v["consumer.poll-period"],
            wait_after_recv_ms=v["consumer.wait-after-recv"], wait_after_batch_ms=v["consumer.wait-after-batch"],
            wait_after_record_ms=v["consumer.wait-after-record"], wait_cmd_period_ms=v["consumer.wait-cmd-period"],
            ack_every=ack_every, ack_after_batch=ack_after_batch, group_protocol=v["consumer.group-protocol"],
            isolation_level=v["consumer.isolation-level"],
        )

    def librdkafka(self) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": f"kafkalab-{self.name}",
            "group.id": self.group_id,
            "enable.auto.commit": self.auto_commit,
            "enable.auto.offset.store": False,  # stored after processing: auto-commit never runs ahead
            "auto.commit.interval.ms": self.auto_commit_interval_ms,
            "fetch.min.bytes": self.fetch_min_bytes,
            "partition.assignment.strategy": _ASSIGNORS[self.assignment_strategy],
            "heartbeat.interval.ms": self.heartbeat_interval_ms,
            "session.timeout.ms": self.session_timeout_ms,
            "auto.offset.reset": "error" if self.auto_offset_reset == "none" else self.auto_offset_reset,
            "isolation.level": self.isolation_level,  # set always: librdkafka's default is read_committed
            "max.poll.interval.ms": 300000,
        }
        if self.group_protocol == "consumer":
            for name in ("partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms"):
                del conf[name]
            conf["group.protocol"] = "consumer"
        if self.instance_id:
            conf["group.instance.id"] = self.instance_id
        return conf


@dataclass(frozen=True, kw_only=True)
class ProcessorConfig(ClientConfig):
    """Validated processor settings (``topic`` is its input): a consumer of the input and a producer to the output,
    whose own configs (:meth:`consumer`, :meth:`producer`) give librdkafka's settings."""

    ROLE = "processor"
    TOPIC = "input-topic"
    output_topic: str
    group_id: str
    transaction_id: str | None
    records_per_transaction: int
    transaction_timeout_ms: int
    isolation_level: str
    auto_offset_reset: str
    max_poll_records: int
    poll_period_ms: int
    wait_after_record_ms: int
    session_timeout_ms: int

    @classmethod
    def _own_fields(cls, v: dict[str, Any], given: set[str], notes: list[str]) -> dict[str, Any]:
        transaction_id = v.get("processor.transaction-id")
        if transaction_id is None and (alone := sorted(given & _TRANSACTIONS_ONLY)):
            raise OptionsConflict(f"{alone[0]} is for a transactional processor: give processor.transaction-id too, "
                                  f"or drop {alone[0]}", (alone[0], "processor.transaction-id"))
        if v["processor.output-topic"] == v["processor.input-topic"]:
            raise OptionsConflict("processor.output-topic must differ from processor.input-topic (it would read "
                                  "its own output)", ("processor.output-topic", "processor.input-topic"))
        return dict(
            output_topic=v["processor.output-topic"], group_id=v["processor.group-id"], transaction_id=transaction_id,
            records_per_transaction=v["processor.records-per-transaction"],
            transaction_timeout_ms=v["processor.transaction-timeout"], isolation_level=v["processor.isolation-level"],
            auto_offset_reset=v["processor.auto-offset-reset"], max_poll_records=v["processor.max-poll-recs"],
            poll_period_ms=v["processor.poll-period"], wait_after_record_ms=v["processor.wait-after-record"],
            session_timeout_ms=v["processor.session-timeout"],
        )

    @property
    def transactional(self) -> bool:
        return self.transaction_id is not None

    @property
    def batch_records(self) -> int:
        """Records a batch (a transaction, exactly once) holds at most."""
        return min(self.max_poll_records, self.records_per_transaction) if self.transactional else (
            self.max_poll_records)

    def consumer(self) -> ConsumerConfig:
        """Its input side as a consumer: offsets committed by the processor only (with its output's transaction,
        exactly once), never in the background."""
        return ConsumerConfig.from_settings({
            BOOTSTRAP: self.bootstrap, "consumer.topic": self.topic, "consumer.group-id": self.group_id,
            "consumer.auto-commit": "false", "consumer.isolation-level": self.isolation_level,
            "consumer.auto-offset-reset": self.auto_offset_reset,
            "consumer.max-poll-recs": str(self.max_poll_records), "consumer.poll-period": str(self.poll_period_ms),
            "consumer.session-timeout": str(self.session_timeout_ms),
            "consumer.heartbeat-interval": str(max(1, min(3000, self.session_timeout_ms // 3))),
            "consumer.local-id": str(self.local_id)})

    def producer(self) -> ProducerConfig:
        """Its output side as a producer: idempotent, acks=all, transactional with a transaction-id."""
        transactions = {} if self.transaction_id is None else {
            "producer.transaction-id": self.transaction_id,
            "producer.transaction-timeout": str(self.transaction_timeout_ms)}
        return ProducerConfig.from_settings({BOOTSTRAP: self.bootstrap, "producer.topic": self.output_topic,
                                             "producer.local-id": str(self.local_id), **transactions})

    def librdkafka(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """librdkafka's settings of its consumer and its producer, both named for the processor."""
        client_id = {"client.id": f"kafkalab-{self.name}"}
        return {**self.consumer().librdkafka(), **client_id}, {**self.producer().librdkafka(), **client_id}
