#!/bin/sh
# A foreign producer for the tests, around `kafkalab type`: a line per record sent, and the course's payload log
# (topic,partition,key,value, the value raw) written per acknowledged record, as the course's producer writes it.
set -eu
n=$(sed -n 's/^producer\.num-records-per-roll=//p' "$KAFKALAB_OPTIONS_FILE")
n=${n:-100}
echo "type producer: $n records to $KAFKALAB_TOPIC via $KAFKALAB_BOOTSTRAP"
i=0
while [ "$i" -lt "$n" ]; do
  echo "$i:quote $i, \"with\" a comma"
  i=$((i + 1))
done | "$PYTHON" -m kafkalab type "$KAFKALAB_TOPIC" --key-sep : --bootstrap "$KAFKALAB_BOOTSTRAP" |
  while IFS="$(printf '\t')" read -r line where; do
    case "$where" in
      "partition "*)
        p=${where#partition }
        printf '%s,%s,%s,%s\n' "$KAFKALAB_TOPIC" "${p%% *}" "${line%%:*}" "${line#*:}" >> payload.log
        echo "acked ${line%%:*} at $(date +%s%3N)" ;;
      *) echo "not acknowledged: $line: $where" >&2 ;;
    esac
  done
echo "type producer: done"
