# The profile RUBY_GC_SAMPLING's out= writes at exit: a relative path is
# resolved where the program started (a later Dir.chdir or daemon does not
# move it); a signal that arrives while it is written still ends the
# program by that signal.
require_relative "helper"
require "tmpdir"

class TestEnvOutAtExit < Minitest::Test
  def test_relative_out_is_resolved_at_start
    Dir.mktmpdir do |dir|
      Dir.mkdir(File.join(dir, "elsewhere"))
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => "interval=4k,out=rel-%p.pb.gz" }
      _, err, status = Open3.capture3(env, RUBY, "-e", "x = Array.new(1000) { 'y' * 50 }; Dir.chdir('elsewhere')",
                                      chdir: dir)
      assert status.success?, err
      assert_equal ["elsewhere", "rel-#{status.pid}.pb.gz", "rel-#{status.pid}.timeline.csv"].sort, Dir.children(dir).sort
      assert_empty Dir.children(File.join(dir, "elsewhere"))
    end
  end

  # The exit-time write blocks opening a FIFO nobody reads; SIGTERM then
  # ends the process by SIGTERM (exit status 143 in a shell), not exit 0.
  def test_sigterm_during_the_exit_write_is_not_swallowed
    Dir.mktmpdir do |dir|
      fifo = File.join(dir, "fifo")
      File.mkfifo(fifo)
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => "interval=4k,out=#{fifo}" }
      r, w = IO.pipe
      pid = spawn(env, RUBY, "-e", "$stdout.sync = true; puts :ending", out: w, err: File::NULL)
      w.close
      assert_equal "ending\n", r.gets
      sleep 0.5   # now blocked opening the FIFO
      Process.kill(:TERM, pid)
      _, status = Process.wait2(pid)
      assert status.signaled?, "ended by a signal (#{status.inspect})"
      assert_equal Signal.list["TERM"], status.termsig
    end
  end
end
