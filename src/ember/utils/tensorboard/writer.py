"""``FileWriter`` and ``SummaryWriter``: events written to a log directory for TensorBoard."""
import os
import time

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from .summary import histogram, scalar, tensorflow_bins, text

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Events and summaries appended to one event file in ``log_dir`` (written in the
    background by tensorboard's ``EventFileWriter``)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            # protobuf may refuse a NumPy or tensor step.
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _default_log_dir(comment):
    """``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``, as torch names a run."""
    import socket
    from datetime import datetime
    now = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", now + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Scalars, histograms and text for TensorBoard, in event files under ``log_dir``.

    The file writers are made on first use after ``close()``, so a closed writer can go on
    logging into a new event file, as torch's does.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        self.log_dir = log_dir or _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = tensorflow_bins()

    def _get_file_writer(self):
        """The writer of ``log_dir``'s event file, made again if closed."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard hides the events of a crashed run from this step on.
                self.file_writer.add_event(
                    Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=self.purge_step,
                          session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style=False, double_precision=False):
        summary = scalar(tag, scalar_value, new_style=new_style,
                         double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each value under ``main_tag`` in a run of its own (``log_dir/main_tag_tag``), so
        that TensorBoard draws them in one chart."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run_dir = log_dir + "/" + main_tag.replace("/", "_") + "_" + tag
            if run_dir not in self.all_writers:
                self.all_writers[run_dir] = FileWriter(
                    run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers[run_dir].add_summary(scalar(main_tag, value), global_step,
                                                  walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def flush(self):
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        if self.all_writers is None:
            return  # closed already
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
