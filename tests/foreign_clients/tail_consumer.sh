#!/bin/sh
# A foreign consumer for the tests, around `kafkalab tail --group`: the course's payload log written per record,
# ended as the course's consumer ends, by a record whose value is quit.
set -eu
group=$(sed -n 's/^consumer\.group-id=//p' "$KAFKALAB_OPTIONS_FILE")
group=${group:-test-app}
echo "tail consumer: group $group on $KAFKALAB_TOPIC"
rm -f records && mkfifo records
"$PYTHON" -m kafkalab tail "$KAFKALAB_TOPIC" --group "$group" --format '%t,%p,%k,%s' \
  --bootstrap "$KAFKALAB_BOOTSTRAP" > records &
tail_pid=$!
trap 'kill "$tail_pid" 2>/dev/null || true' EXIT
while IFS= read -r line; do
  case "$line" in
    *,quit) echo "tail consumer: quit"; break ;;
  esac
  printf '%s\n' "$line" >> payload.log
done < records
