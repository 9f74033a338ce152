"""Pictures and videos: the PNG export, animations and their captions, the video writer, the comparison export and the export command's parts."""
