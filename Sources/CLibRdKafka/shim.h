// librdkafka, imported only by SluiceKafka. The macros below have casts or expressions Swift does not import.
#include <librdkafka/rdkafka.h>

static const int sluice_rd_kafka_msg_f_copy = RD_KAFKA_MSG_F_COPY;
static const int sluice_rd_kafka_msg_f_partition = RD_KAFKA_MSG_F_PARTITION;
static const int32_t sluice_rd_kafka_partition_ua = RD_KAFKA_PARTITION_UA;
static const int64_t sluice_rd_kafka_offset_invalid = RD_KAFKA_OFFSET_INVALID;
