# The build's front door: configure stops with one clear message for a
# missing or wrong source directory, a tarball with a wrong checksum, or an
# unsupported Ruby version; a patch that does not apply stops with its name
# and leaves the record of applied patches true.
require_relative "helper"
require "tmpdir"
require "fileutils"

class TestBuildTools < Minitest::Test
  TOP = File.expand_path("../..", __dir__)

  def configure(*args)
    Dir.mktmpdir do |dir|
      out, err, status = Open3.capture3(File.join(TOP, "configure"), *args, chdir: dir)
      refute File.exist?(File.join(dir, "Makefile")), "no Makefile after a failed configure"
      return [out + err, status]
    end
  end

  def test_missing_source_directory
    text, status = configure("--with-ruby-source=/nonexistent/ruby")
    refute status.success?
    assert_match(%r{'/nonexistent/ruby' is not a directory \(expected an unpacked Ruby 3\.4\.5 source tree\)}, text)
  end

  def test_not_a_ruby_tree
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-source=#{d}")
      refute status.success?
      assert_match(/is not a Ruby source tree/, text)
    end
  end

  def test_unsupported_version
    Dir.mktmpdir do |d|
      FileUtils.mkdir_p(["#{d}/gc/default", "#{d}/include/ruby"])
      File.write("#{d}/gc/default/default.c", "")
      File.write("#{d}/configure", "#!/bin/sh\n")
      File.chmod(0o755, "#{d}/configure")
      File.write("#{d}/include/ruby/version.h", "#define RUBY_API_VERSION_MAJOR 3\n#define RUBY_API_VERSION_MINOR 3\n")
      text, status = configure("--with-ruby-source=#{d}")
      refute status.success?
      assert_match(/holds Ruby 3\.3; this project patches Ruby 3\.4 \(expected 3\.4\.5\)/, text)
    end
  end

  def test_wrong_checksum
    Dir.mktmpdir do |d|
      bad = File.join(d, "ruby-3.4.5.tar.xz")
      File.write(bad, "not ruby")
      text, status = configure("--with-ruby-tarball=#{bad}")
      refute status.success?
      assert_match(/SHA-256 of '#{Regexp.escape(bad)}' is \h{64}; expected 141fb3b0/, text)
    end
  end

  def test_patch_that_does_not_apply
    Dir.mktmpdir do |d|
      tree = File.join(d, "tree")
      FileUtils.mkdir_p(tree)
      File.write(File.join(tree, "a.c"), "one\ntwo\n")
      good = File.join(d, "0001-good.patch")
      File.write(good, "--- a/a.c\n+++ b/a.c\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n")
      bad = File.join(d, "0002-bad.patch")
      File.write(bad, "--- a/a.c\n+++ b/a.c\n@@ -1,2 +1,2 @@\n zzz\n-yyy\n+xxx\n")
      out, err, status = Open3.capture3(File.join(TOP, "tools/apply-patches"), tree, good, bad)
      refute status.success?
      assert_match(/patch 0002-bad\.patch does not apply/, out + err)
      assert_equal ["0001-good.patch"], Dir.children(File.join(tree, ".sampling-gc-patches")).sort
      # the next run reverses what is recorded and applies the new series
      _, err, status = Open3.capture3(File.join(TOP, "tools/apply-patches"), tree)
      assert status.success?, err
      assert_equal "one\ntwo\n", File.read(File.join(tree, "a.c"))
    end
  end
end
